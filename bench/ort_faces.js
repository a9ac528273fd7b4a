// The peer of bench/e2e and bench/streams: BlazeFace on raw frames piped in
// by the ffmpeg CLI (SIZE x SIZE rgb24, already letterboxed and scaled by
// ffmpeg), with ONNX Runtime's CPU provider: [-1, 1] NHWC input, one
// inference per frame, the anchors above the score threshold counted (the
// decode and NMS that reel's detect does are left out, in the peer's
// favour). Prints the frames done at the end, or with `lines` one line per
// frame as it is done (written at once, so a caller can count frames in a
// time window).
//   ffmpeg ... -f rawvideo - | node ort_faces.js ORT_MODULE_DIR MODEL.onnx SIZE THREADS [lines]
'use strict';
const fs = require('fs');
const [ortDir, model, sizeText, threads, mode] = process.argv.slice(2);
const ort = require(ortDir);
const size = Number(sizeText), frameBytes = size * size * 3, perFrame = mode === 'lines';

(async () => {
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, logSeverityLevel: 3,
  });
  const input = session.inputNames[0];
  let pending = Buffer.alloc(0), frames = 0, found = 0;
  const data = new Float32Array(frameBytes);
  for await (const chunk of process.stdin) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= frameBytes) {
      for (let i = 0; i < frameBytes; i++) data[i] = pending[i] / 127.5 - 1;
      pending = pending.subarray(frameBytes);
      const out = await session.run({ [input]: new ort.Tensor('float32', data, [1, size, size, 3]) });
      let here = 0;
      for (const name of session.outputNames) {
        const t = out[name];
        if (t.dims[t.dims.length - 1] !== 1) continue; // the score outputs
        for (const logit of t.data) if (logit > 0.4) here++; // sigmoid > 0.6
      }
      found += here;
      if (perFrame)
        fs.writeSync(1, `${frames} ${here}\n`);
      frames++;
    }
  }
  if (!perFrame)
    console.log(`${frames} frames, ${found} anchors above threshold`);
})().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
