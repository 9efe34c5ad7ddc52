// node tests/tfjs/run_graph_models.mjs MODELS_DIR CASES_JSON OUT_DIR
// The reference for py_engine's GraphModel: for each case {model, inputs: [{file, shape, dtype}]} in CASES_JSON,
// loads MODELS_DIR/<model>/model.json with the real TensorFlow.js's tf.loadGraphModel (pure JS, cpu backend; its
// files read from disk as a browser would fetch them), runs executeAsync on the inputs (raw little-endian values)
// and writes OUT_DIR/<model>.json: [{name, shape, dtype, file}] per output, in the model's outputNodes order, the
// values in OUT_DIR/<model>.<k>.bin.
import fs from 'node:fs';
import path from 'node:path';
import tf from '@tensorflow/tfjs';

const [modelsDir, casesJson, outDir] = process.argv.slice(2);
if (!outDir) throw new Error('usage: node run_graph_models.mjs MODELS_DIR CASES_JSON OUT_DIR');
await tf.setBackend('cpu');

const ARRAYS = {float32: Float32Array, int32: Int32Array, bool: Uint8Array};

for (const {model: name, inputs} of JSON.parse(fs.readFileSync(casesJson, 'utf8'))) {
  const dir = path.join(modelsDir, name);
  const modelJson = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
  const weightSpecs = modelJson.weightsManifest.flatMap((group) => group.weights);
  const shards = modelJson.weightsManifest.flatMap((group) => group.paths).map((p) => fs.readFileSync(path.join(dir, p)));
  const model = await tf.loadGraphModel(tf.io.fromMemory({
    modelTopology: modelJson.modelTopology, format: modelJson.format, signature: modelJson.signature,
    userDefinedMetadata: modelJson.userDefinedMetadata, weightSpecs,
    weightData: new Uint8Array(Buffer.concat(shards)).buffer,
  }));
  const xs = inputs.map(({file, shape, dtype}) => {
    const bytes = fs.readFileSync(path.join(outDir, file));
    const values = new ARRAYS[dtype](bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    return tf.tensor(values, shape, dtype);
  });
  const outputs = [await model.executeAsync(xs.length === 1 ? xs[0] : xs)].flat();
  const written = [];
  for (const [k, t] of outputs.entries()) {
    const file = `${name}.${k}.bin`;
    // values converted to the tensor's dtype: TF.js 4.22 leaves some float32 outputs of graph models holding
    // an Int32Array (handtrack's num_detections), whose bytes read as float32 would be garbage
    const data = ARRAYS[t.dtype].from(await t.data());
    fs.writeFileSync(path.join(outDir, file), Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    written.push({name: model.outputNodes[k], shape: t.shape, dtype: t.dtype, file});
  }
  fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify(written));
  tf.dispose([...xs, ...outputs]);
  model.dispose();
}
