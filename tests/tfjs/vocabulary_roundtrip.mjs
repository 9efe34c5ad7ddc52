// node tests/tfjs/vocabulary_roundtrip.mjs save OUTDIR
// node tests/tfjs/vocabulary_roundtrip.mjs load MODELDIR INPUT_JSON OUTPUT_JSON
// The training vocabulary through the TF.js layers format, with the real TensorFlow.js (pure JS, cpu backend).
//
// save: builds a model whose Dense layers use every activation, every initializer, L1/L2/L1L2 regularizers and every
// constraint, compiled with a loss, metrics and an optimizer of the vocabulary (Adamax), seeds its weights and saves it
// into OUTDIR/main (model.json with its trainingConfig, as model.save({includeOptimizer}) writes it, without the
// optimizer's weights: TF.js 4.22's Adamax cannot save them). It then loads that folder back, as any TF.js page
// would, and writes OUTDIR/io.json: {input, reloaded: TF.js's predictions of the loaded model}. OUTDIR/gelu_new holds
// a model using gelu_new, which TF.js writes but cannot load back ("geluNew" is unknown to it): io.json has its
// in-memory predictions and the error TF.js gives when loading it.
//
// load: loads a model py_engine saved into MODELDIR (with its trainingConfig), predicts on INPUT_JSON ({shape, data}),
// and writes OUTPUT_JSON: {outputs, topology: the model as TF.js serializes it again (model.toJSON), trainingConfig:
// the compiled model's, weights: {name: {shape, data}} after loading}.
import fs from 'node:fs';
import path from 'node:path';
import tf from '@tensorflow/tfjs';

await tf.setBackend('cpu');
const [mode, ...args] = process.argv.slice(2);
const entry = async (t) => ({shape: t.shape, data: Array.from(await t.data())});

async function save(model, folder) {
  fs.mkdirSync(folder, {recursive: true});
  await model.save(tf.io.withSaveHandler(async (artifacts) => {
    const modelJson = {
      modelTopology: artifacts.modelTopology, format: artifacts.format, generatedBy: artifacts.generatedBy,
      convertedBy: artifacts.convertedBy, trainingConfig: model.optimizer == null ? null : model.getTrainingConfig(),
      weightsManifest: [{paths: ['./model.weights.bin'], weights: artifacts.weightSpecs}],
    };
    const weightData = tf.io.CompositeArrayBuffer.join(artifacts.weightData);
    fs.writeFileSync(path.join(folder, 'model.weights.bin'), Buffer.from(weightData));
    fs.writeFileSync(path.join(folder, 'model.json'), JSON.stringify(modelJson));
    return {modelArtifactsInfo: {dateSaved: new Date(), modelTopologyType: 'JSON'}};
  }));
}

async function load(folder) {
  const modelJson = JSON.parse(fs.readFileSync(path.join(folder, 'model.json'), 'utf8'));
  const weightSpecs = modelJson.weightsManifest.flatMap((group) => group.weights);
  const shards = modelJson.weightsManifest.flatMap((group) => group.paths)
    .map((p) => fs.readFileSync(path.join(folder, p)));
  const weightData = new Uint8Array(Buffer.concat(shards)).buffer;
  return tf.loadLayersModel(tf.io.fromMemory({
    modelTopology: modelJson.modelTopology, weightSpecs, weightData, trainingConfig: modelJson.trainingConfig,
  }));
}

function seedWeights(model) {
  model.setWeights(model.weights.map((w, seed) => tf.randomNormal(w.shape, 0, 0.6, 'float32', seed + 100)));
}

if (mode === 'save') {
  const [outDir] = args;
  const L = tf.layers;
  const I = tf.initializers;
  const R = tf.regularizers;
  const C = tf.constraints;
  const ACTIVATIONS = ['elu', 'hardSigmoid', 'linear', 'relu', 'relu6', 'selu', 'sigmoid', 'softmax', 'softplus',
                       'softsign', 'tanh', 'swish', 'mish', 'gelu', 'logSoftmax'];
  const INITIALIZERS = [I.zeros(), I.ones(), I.constant({value: 0.3}), I.identity({gain: 0.5}),
                        I.randomUniform({minval: -0.2, maxval: 0.4, seed: 1}),
                        I.randomNormal({mean: 0.1, stddev: 0.2, seed: 2}),
                        I.truncatedNormal({mean: 0.0, stddev: 0.3, seed: 3}), I.glorotUniform({seed: 4}),
                        I.glorotNormal({seed: 5}), I.heUniform({seed: 6}), I.heNormal({seed: 7}),
                        I.leCunUniform({seed: 8}), I.leCunNormal({seed: 9}), I.orthogonal({gain: 1.5, seed: 10}),
                        I.varianceScaling({scale: 2, mode: 'fanOut', distribution: 'uniform', seed: 11})];
  const BIAS_INITIALIZERS = INITIALIZERS.filter((i) => !['Identity', 'Orthogonal'].includes(i.getClassName()));
  const REGULARIZERS = [R.l1({l1: 0.01}), R.l2({l2: 0.02}), R.l1l2({l1: 0.003, l2: 0.004}), null];
  const CONSTRAINTS = [C.maxNorm({maxValue: 1.2, axis: 0}), C.minMaxNorm({minValue: 0.5, maxValue: 1, rate: 0.8}),
                       C.nonNeg(), C.unitNorm({axis: 1}), null];
  const input = tf.input({shape: [6], name: 'x'});
  let h = input;
  ACTIVATIONS.forEach((activation, k) => {
    h = L.dense({
      units: 6, activation, name: `dense_${activation}`,
      kernelInitializer: INITIALIZERS[k], biasInitializer: BIAS_INITIALIZERS[k % BIAS_INITIALIZERS.length],
      kernelRegularizer: REGULARIZERS[k % 4], biasRegularizer: REGULARIZERS[(k + 1) % 4],
      kernelConstraint: CONSTRAINTS[k % 5], biasConstraint: k % 3 === 0 ? C.nonNeg() : null,
    }).apply(h);
  });
  const model = tf.model({inputs: input, outputs: h, name: 'vocabulary'});
  seedWeights(model);
  model.compile({loss: 'meanSquaredLogarithmicError', metrics: ['mape', 'precision', 'cosine', 'MSE'],
                 optimizer: tf.train.adamax(0.01, 0.8, 0.95, 1e-6, 0.01)});
  await save(model, path.join(outDir, 'main'));
  const x = tf.randomNormal([5, 6], 0, 1, 'float32', 50);
  const reloaded = await load(path.join(outDir, 'main'));

  const geluNew = tf.sequential({name: 'gelu_new_model', layers: [
    L.dense({inputShape: [6], units: 4, activation: 'gelu_new', name: 'dense_gelu_new'}),
  ]});
  seedWeights(geluNew);
  await save(geluNew, path.join(outDir, 'gelu_new'));
  let geluNewError = null;
  try {
    await load(path.join(outDir, 'gelu_new'));
  } catch (e) {
    geluNewError = String(e.message);
  }
  fs.writeFileSync(path.join(outDir, 'io.json'), JSON.stringify({
    input: await entry(x), reloaded: await entry(reloaded.predict(x)),
    gelu_new: {output: await entry(geluNew.predict(x)), reload_error: geluNewError},
  }));
} else if (mode === 'load') {
  const [modelDir, inputJson, outputJson] = args;
  const model = await load(modelDir);
  const input = JSON.parse(fs.readFileSync(inputJson, 'utf8'));
  const outputs = [model.predict(tf.tensor(input.data, input.shape))].flat();
  const weights = {};
  for (const w of model.weights) weights[w.originalName] = await entry(w.read());
  fs.writeFileSync(outputJson, JSON.stringify({
    outputs: await Promise.all(outputs.map(entry)), topology: model.toJSON(null, false),
    trainingConfig: model.optimizer == null ? null : model.getTrainingConfig(), weights,
  }));
} else {
  throw new Error('usage: node vocabulary_roundtrip.mjs save OUTDIR | load MODELDIR INPUT_JSON OUTPUT_JSON');
}
