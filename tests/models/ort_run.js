// The reference: runs an ONNX model with ONNX Runtime's CPU provider on
// float32 .npy inputs and writes one .npy per output, named like reel's
// (':' and '/' in names become '_').
//   node ort_run.js ORT_MODULE_DIR MODEL.onnx OUT_DIR NAME=FILE.npy...
'use strict';
const fs = require('fs');
const path = require('path');
const [ortDir, model, outDir, ...pairs] = process.argv.slice(2);
const ort = require(ortDir);

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  if (!header.includes("'<f4'") || header.includes("'fortran_order': True"))
    throw new Error(`${file}: only little-endian float32 C-order arrays`);
  const shape = header.match(/\(([^)]*)\)/)[1].split(',').filter((s) => s.trim()).map(Number);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + 10 + headerLen, buf.byteOffset + buf.length));
  return new ort.Tensor('float32', data, shape);
}

function writeNpy(file, tensor) {
  if (tensor.type !== 'float32') throw new Error(`${file}: output type ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), Buffer.from(tensor.data.buffer)]));
}

(async () => {
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, logSeverityLevel: 3 });
  const feeds = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    feeds[p.slice(0, eq)] = readNpy(p.slice(eq + 1));
  }
  const results = await session.run(feeds);
  for (const name of session.outputNames)
    writeNpy(path.join(outDir, name.replace(/[:/]/g, '_') + '.npy'), results[name]);
})().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
