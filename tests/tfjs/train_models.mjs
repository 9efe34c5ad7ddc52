// node tests/tfjs/train_models.mjs OUTDIR
// Trains tiny models with the real TensorFlow.js (pure JS, cpu backend) and records what py_engine's Model.fit
// must reproduce. For each model case and each optimizer (9 trainings, 3 epochs each) it writes OUTDIR/<case>/:
// - initial/model.json + model.weights.bin: the model with seeded weights, saved before any training;
// - data.json: {x, y, validation?: {x, y}}, each {shape, dtype, data};
// - result.json: {loss, optimizer, batchSize, epochs, history (TF.js's keys), weights: {name: {shape, data}}}.
// The last case's result.json is written last, so its presence means the run finished.
import fs from 'node:fs';
import path from 'node:path';
import tf from '@tensorflow/tfjs';
import {writeModel} from './write_model.mjs';

const outDir = process.argv[2];
if (!outDir) throw new Error('usage: node train_models.mjs OUTDIR');
await tf.setBackend('cpu');
const L = tf.layers;

// Labels a model can learn: the argmax of a fixed random linear map of the features.
function linearTeacherClasses(x, numClasses, seed) {
  const teacher = tf.randomNormal([x.shape[1], numClasses], 0, 1, 'float32', seed);
  return x.matMul(teacher).argMax(-1);
}

// Binary labels for images: is the top half of channel 0 brighter than the bottom half of channel 1?
function imageTeacherLabels(x) {
  const rows = x.shape[1] / 2;
  const top = x.slice([0, 0, 0, 0], [-1, rows, -1, 1]).mean([1, 2, 3]);
  const bottom = x.slice([0, rows, 0, 1], [-1, rows, -1, 1]).mean([1, 2, 3]);
  return top.greater(bottom).cast('float32').reshape([-1, 1]);
}

const CASES = {
  // Dense(relu) -> Dense(softmax), one-hot labels, 30 samples in batches of 8 (the last one has 6).
  mlp: {
    loss: 'categoricalCrossentropy',
    batchSize: 8,
    build: () => tf.sequential({name: 'mlp', layers: [
      L.dense({inputShape: [4], units: 8, activation: 'relu', name: 'hidden'}),
      L.dense({units: 3, activation: 'softmax', name: 'probs'}),
    ]}),
    data: () => {
      const x = tf.randomNormal([30, 4], 0, 1, 'float32', 11);
      return {x, y: tf.oneHot(linearTeacherClasses(x, 3, 12), 3).cast('float32')};
    },
  },
  // Conv2D(relu) -> MaxPooling2D -> Flatten -> Dense(1, sigmoid); 20 samples in batches of 8 (8, 8, 4),
  // with validation data.
  conv: {
    loss: 'binaryCrossentropy',
    batchSize: 8,
    build: () => tf.sequential({name: 'conv', layers: [
      L.conv2d({inputShape: [6, 6, 2], filters: 4, kernelSize: 3, activation: 'relu', name: 'conv'}),
      L.maxPooling2d({poolSize: 2, name: 'pool'}),
      L.flatten({name: 'flatten'}),
      L.dense({units: 1, activation: 'sigmoid', name: 'prob'}),
    ]}),
    data: () => {
      const x = tf.randomNormal([20, 6, 6, 2], 0, 1, 'float32', 21);
      const xv = tf.randomNormal([10, 6, 6, 2], 0, 1, 'float32', 22);
      return {x, y: imageTeacherLabels(x), validation: {x: xv, y: imageTeacherLabels(xv)}};
    },
  },
  // Class indices, shape [N, 1] as TF.js requires for sparse categorical crossentropy; 28 samples. TF.js's loss
  // floors its labels, so they must be float32 there (the Python side gives them to the engine as int32).
  sparse: {
    loss: 'sparseCategoricalCrossentropy',
    batchSize: 8,
    build: () => tf.sequential({name: 'sparse', layers: [
      L.dense({inputShape: [5], units: 8, activation: 'relu', name: 'hidden'}),
      L.dense({units: 4, activation: 'softmax', name: 'probs'}),
    ]}),
    data: () => {
      const x = tf.randomNormal([28, 5], 0, 1, 'float32', 31);
      return {x, y: linearTeacherClasses(x, 4, 32).cast('float32').reshape([-1, 1])};
    },
  },
};

const OPTIMIZERS = {
  momentum: {settings: {name: 'momentum', learningRate: 0.1, momentum: 0.9},
             make: (s) => tf.train.momentum(s.learningRate, s.momentum)},
  adam: {settings: {name: 'adam', learningRate: 0.02}, make: (s) => tf.train.adam(s.learningRate)},
  rmsprop: {settings: {name: 'rmsprop', learningRate: 0.01}, make: (s) => tf.train.rmsprop(s.learningRate)},
};
const EPOCHS = 3;

// Seeded weights: kernels scaled by their fan-in, small biases; the same for a case whatever the optimizer.
function seedWeights(model) {
  model.setWeights(model.weights.map((w, seed) => {
    const size = w.shape.reduce((a, b) => a * b, 1);
    if (!w.originalName.endsWith('kernel')) return tf.randomUniform(w.shape, -0.1, 0.1, 'float32', seed);
    return tf.randomNormal(w.shape, 0, 1 / Math.sqrt(size / w.shape[w.shape.length - 1]), 'float32', seed);
  }));
}

const entry = async (t) => ({shape: t.shape, dtype: t.dtype, data: Array.from(await t.data())});

for (const [caseName, spec] of Object.entries(CASES)) {
  const {x, y, validation} = spec.data();
  const data = {x: await entry(x), y: await entry(y)};
  if (validation) data.validation = {x: await entry(validation.x), y: await entry(validation.y)};
  for (const [optimizerName, optimizer] of Object.entries(OPTIMIZERS)) {
    const dir = path.join(outDir, `${caseName}-${optimizerName}`);
    const model = spec.build();
    seedWeights(model);
    await writeModel(model, path.join(dir, 'initial'));
    fs.writeFileSync(path.join(dir, 'data.json'), JSON.stringify(data));

    model.compile({optimizer: optimizer.make(optimizer.settings), loss: spec.loss, metrics: ['accuracy']});
    const history = await model.fit(x, y, {
      batchSize: spec.batchSize, epochs: EPOCHS, shuffle: false, verbose: 0,
      validationData: validation ? [validation.x, validation.y] : undefined,
    });
    const weights = {};
    for (const w of model.weights) weights[w.originalName] = await entry(w.read());
    const result = {
      loss: spec.loss, optimizer: optimizer.settings, batchSize: spec.batchSize, epochs: EPOCHS,
      history: history.history, weights,
    };
    fs.writeFileSync(path.join(dir, 'result.json'), JSON.stringify(result));
    model.optimizer.dispose();
    model.dispose();
  }
}
