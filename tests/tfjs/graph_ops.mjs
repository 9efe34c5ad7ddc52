// node tests/tfjs/graph_ops.mjs INFILE OUTFILE
// What TF.js's ops compute for calls that tests/test_tfjs_graph_ops.py lists: INFILE is {id: {fn, args}}, fn a path
// on tf ("image.nonMaxSuppressionWithScore"), each arg a number, a bool, a list of args, or {tensor: {dtype, shape, b64}}
// (the little-endian bytes of the values, so NaN and the infinities cross exactly). The result of each call (a tensor,
// or lists and objects of them, flattened in their order) is written as a list of such tensors. The file is written
// last, so its presence means the run finished.
import fs from 'node:fs';
import tf from '@tensorflow/tfjs';

const [inFile, outFile] = process.argv.slice(2);
if (!outFile) throw new Error('usage: node graph_ops.mjs INFILE OUTFILE');
await tf.setBackend('cpu');

const ARRAYS = {float32: Float32Array, int32: Int32Array, bool: Uint8Array};

function toTensor({dtype, shape, b64}) {
  const bytes = Buffer.from(b64, 'base64');
  const values = new ARRAYS[dtype](bytes.buffer, bytes.byteOffset, bytes.length / ARRAYS[dtype].BYTES_PER_ELEMENT);
  return tf.tensor(dtype === 'bool' ? Array.from(values, Boolean) : values, shape, dtype);
}

async function fromTensor(t) {
  const values = new ARRAYS[t.dtype](await t.data());
  return {dtype: t.dtype, shape: t.shape, b64: Buffer.from(values.buffer).toString('base64')};
}

const fromArg = (a) => (Array.isArray(a) ? a.map(fromArg) : a !== null && typeof a === 'object' && a.tensor ? toTensor(a.tensor) : a);

const calls = JSON.parse(fs.readFileSync(inFile, 'utf8'));
const results = {};
for (const [id, {fn, args}] of Object.entries(calls)) {
  const f = fn.split('.').reduce((o, k) => o[k], tf);
  if (typeof f !== 'function') throw new Error(`${id}: tf.${fn} is not a function`);
  const out = await f(...args.map(fromArg));
  const flat = (o) => (o instanceof tf.Tensor ? [o] : (Array.isArray(o) ? o : Object.values(o)).flatMap(flat));
  const tensors = flat(out);
  results[id] = await Promise.all(tensors.map(fromTensor));
}
fs.writeFileSync(outFile, JSON.stringify(results));
