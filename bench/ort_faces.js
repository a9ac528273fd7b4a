// The peer of bench/e2e: BlazeFace on raw frames piped in by the ffmpeg CLI
// (SIZE x SIZE rgb24, already letterboxed and scaled by ffmpeg), with ONNX
// Runtime's CPU provider: [-1, 1] NHWC input, one inference per frame, the
// anchors above the score threshold counted (the decode and NMS that reel's
// detect does are left out, in the peer's favour). Prints the frames done.
//   ffmpeg ... -f rawvideo - | node ort_faces.js ORT_MODULE_DIR MODEL.onnx SIZE THREADS
'use strict';
const [ortDir, model, sizeText, threads] = process.argv.slice(2);
const ort = require(ortDir);
const size = Number(sizeText), frameBytes = size * size * 3;

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
      for (const name of session.outputNames) {
        const t = out[name];
        if (t.dims[t.dims.length - 1] !== 1) continue; // the score outputs
        for (const logit of t.data) if (logit > 0.4) found++; // sigmoid > 0.6
      }
      frames++;
    }
  }
  console.log(`${frames} frames, ${found} anchors above threshold`);
})().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
