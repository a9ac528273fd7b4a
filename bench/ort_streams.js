// One stream of the peer in bench/streams: BlazeFace on the raw frames that
// the ffmpeg CLI decodes from a live stream and pipes in (SIZE x SIZE rgb24,
// already letterboxed and scaled by ffmpeg), with ONNX Runtime's CPU
// provider as in ort_faces.js: [-1, 1] NHWC input, one inference per frame,
// the anchors above the score threshold counted. Writes one line per frame
// done as it is done, so that the caller can count frames in a time window.
//   ffmpeg ... -f rawvideo - | node ort_streams.js ORT_MODULE_DIR MODEL.onnx SIZE THREADS > frames.txt
'use strict';
const fs = require('fs');
const [ortDir, model, sizeText, threads] = process.argv.slice(2);
const ort = require(ortDir);
const size = Number(sizeText), frameBytes = size * size * 3;

(async () => {
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, logSeverityLevel: 3,
  });
  const input = session.inputNames[0];
  let pending = Buffer.alloc(0), frames = 0;
  const data = new Float32Array(frameBytes);
  for await (const chunk of process.stdin) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= frameBytes) {
      for (let i = 0; i < frameBytes; i++) data[i] = pending[i] / 127.5 - 1;
      pending = pending.subarray(frameBytes);
      const out = await session.run({ [input]: new ort.Tensor('float32', data, [1, size, size, 3]) });
      let found = 0;
      for (const name of session.outputNames) {
        const t = out[name];
        if (t.dims[t.dims.length - 1] !== 1) continue; // the score outputs
        for (const logit of t.data) if (logit > 0.4) found++; // sigmoid > 0.6
      }
      // Synchronous: the line is in the file when the frame counts as done.
      fs.writeSync(1, `${frames++} ${found}\n`);
    }
  }
})().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
