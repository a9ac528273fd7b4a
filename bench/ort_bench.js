// ONNX Runtime's side of bench/models: median milliseconds per inference of
// a model on random float32 inputs (symbolic dims as 1, or the shapes given
// as reel model bench's --shape takes them), CPU provider.
//   node ort_bench.js ORT_MODULE_DIR MODEL.onnx THREADS RUNS [NAME=D1xD2x... ...]
'use strict';
const [ortDir, model, threads, runs, ...shapeArgs] = process.argv.slice(2);
const ort = require(ortDir);
const shapes = Object.fromEntries(shapeArgs.map((a) => {
  const [name, dims] = a.split('=');
  return [name, dims.split('x').map(Number)];
}));

(async () => {
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, logSeverityLevel: 3,
  });
  const feeds = {};
  for (const name of session.inputNames) {
    const meta = session.inputMetadata ? session.inputMetadata.find((m) => m.name === name) : null;
    const dims = shapes[name]
      || (meta && meta.shape ? meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1)) : null);
    if (!dims) throw new Error(`no static shape for input ${name}`);
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = Math.random();
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  for (let i = 0; i < 3; i++) await session.run(feeds); // warm-up
  const times = [];
  for (let i = 0; i < Number(runs); i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(times[Math.floor(times.length / 2)].toFixed(3));
})().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
