// node tests/tfjs/train_vocabulary.mjs OUTDIR
// Trains a small MLP (Dense relu 5 -> 8, Dense softmax -> 3, one-hot labels, 30 samples in batches of 8) with the real
// TensorFlow.js once per optimizer, regularizer and constraint case, and records what py_engine's Model.fit must
// reproduce, as train_models.mjs does (OUTDIR/<case>/initial, data.json, result.json). Where TF.js 4.22 is wrong
// the case trains with Keras's rule, written here in TF.js:
// - adadelta: an Optimizer subclass with Keras's update (TF.js's AdadeltaOptimizer divides by the accumulator from
//   before the step);
// - constraints: TF.js's fit never applies them (tfjs#3345); a callback projects each constrained weight after every
//   batch's update, as Keras does.
// The last case's result.json is written last, so its presence means the run finished.
import fs from 'node:fs';
import path from 'node:path';
import tf from '@tensorflow/tfjs';
import {writeModel} from './write_model.mjs';

const outDir = process.argv[2];
if (!outDir) throw new Error('usage: node train_vocabulary.mjs OUTDIR');
await tf.setBackend('cpu');
const L = tf.layers;

// Keras's Adadelta (keras/src/optimizers/adadelta.py), op for op as py_engine's fused rule computes it.
class KerasAdadelta extends tf.Optimizer {
  static get className() { return 'KerasAdadelta'; }
  constructor(learningRate, rho, epsilon) {
    super();
    Object.assign(this, {learningRate, rho, epsilon, slots: {}});
  }
  applyGradients(variableGradients) {
    const pairs = Array.isArray(variableGradients) ? variableGradients.map((v) => [v.name, v.tensor]) :
                                                     Object.entries(variableGradients);
    for (const [name, g] of pairs) {
      const value = tf.engine().registeredVariables[name];
      if (!this.slots[name]) {
        this.slots[name] = [tf.zerosLike(value).variable(false), tf.zerosLike(value).variable(false)];
      }
      const [accGrad, accUpdate] = this.slots[name];
      tf.tidy(() => {
        const newAccGrad = accGrad.mul(this.rho).add(g.square().mul(1 - this.rho));
        const update = accUpdate.add(this.epsilon).sqrt().div(newAccGrad.add(this.epsilon).sqrt()).mul(g);
        const newAccUpdate = accUpdate.mul(this.rho).add(update.square().mul(1 - this.rho));
        accGrad.assign(newAccGrad);
        accUpdate.assign(newAccUpdate);
        value.assign(update.mul(-this.learningRate).add(value));
      });
    }
    this.incrementIterations();
  }
  getConfig() { return {learningRate: this.learningRate, rho: this.rho, epsilon: this.epsilon}; }
  dispose() { for (const slots of Object.values(this.slots)) tf.dispose(slots); }
}

const momentum = {name: 'momentum', learningRate: 0.1, momentum: 0.9};
const R = tf.regularizers;
const C = tf.constraints;
// case: {optimizer settings, hidden / probs layer arguments (regularizers, constraints), keras constraints?}
const CASES = {
  'adadelta': {optimizer: {name: 'adadelta', learningRate: 1.0, rho: 0.9, epsilon: 1e-6}},
  'adamax': {optimizer: {name: 'adamax', learningRate: 0.02, beta1: 0.9, beta2: 0.99, decay: 0.1}},
  'l1': {optimizer: momentum, hidden: {kernelRegularizer: R.l1({l1: 0.01})}},
  'l2': {optimizer: momentum,
         hidden: {kernelRegularizer: R.l2({l2: 0.02}), biasRegularizer: R.l2({l2: 0.05})},
         probs: {kernelRegularizer: R.l2({l2: 0.01})}},
  'l1l2': {optimizer: {name: 'adam', learningRate: 0.02},
           hidden: {kernelRegularizer: R.l1l2({l1: 0.005, l2: 0.01})},
           probs: {kernelRegularizer: R.l1l2({l1: 0.01, l2: 0.01}), biasRegularizer: R.l1l2({l1: 0.02, l2: 0})}},
  'maxNorm': {optimizer: momentum, hidden: {kernelConstraint: C.maxNorm({maxValue: 0.9, axis: 0})}},
  // Its projection with rate < 1 moves norms outside [min, max] only part of the way, so projecting twice differs
  // from once: the hidden kernel starts with columns of norm 0.7, where both loaders' projection changes nothing.
  'minMaxNorm': {optimizer: momentum, columnNorm: 0.7,
                 hidden: {kernelConstraint: C.minMaxNorm({minValue: 0.6, maxValue: 0.8, rate: 0.7, axis: 0})}},
  'nonNeg': {optimizer: momentum, hidden: {biasConstraint: C.nonNeg()}, probs: {kernelConstraint: C.nonNeg()}},
  'unitNorm': {optimizer: momentum, probs: {kernelConstraint: C.unitNorm({axis: 0})}},
};

function makeOptimizer(s) {
  if (s.name === 'momentum') return tf.train.momentum(s.learningRate, s.momentum);
  if (s.name === 'adam') return tf.train.adam(s.learningRate);
  if (s.name === 'adamax') return tf.train.adamax(s.learningRate, s.beta1, s.beta2, undefined, s.decay);
  if (s.name === 'adadelta') return new KerasAdadelta(s.learningRate, s.rho, s.epsilon);
  throw new Error(`unknown optimizer ${s.name}`);
}

// Labels a model can learn: the argmax of a fixed random linear map of the features.
const x = tf.randomNormal([30, 5], 0, 1, 'float32', 41);
const y = tf.oneHot(x.matMul(tf.randomNormal([5, 3], 0, 1, 'float32', 42)).argMax(-1), 3).cast('float32');
const entry = async (t) => ({shape: t.shape, dtype: t.dtype, data: Array.from(await t.data())});
const data = {x: await entry(x), y: await entry(y)};
const EPOCHS = 3;
const BATCH = 8;

// Seeded weights, the same for every case: kernels scaled by their fan-in, biases that a nonNeg constraint moves.
// columnNorm: the first kernel's columns scaled to that norm.
function seedWeights(model, columnNorm) {
  model.setWeights(model.weights.map((w, seed) => {
    const size = w.shape.reduce((a, b) => a * b, 1);
    if (!w.originalName.endsWith('kernel')) return tf.randomUniform(w.shape, -0.2, 0.2, 'float32', seed);
    const kernel = tf.randomNormal(w.shape, 0, 1.5 / Math.sqrt(size / w.shape[w.shape.length - 1]), 'float32', seed);
    if (columnNorm == null || seed !== 0) return kernel;
    return kernel.div(kernel.square().sum(0, true).sqrt()).mul(columnNorm);
  }));
}

// Keras applies constraints after every update; TF.js's fit does not (it applies them only in LayerVariable.write).
const applyConstraints = (model) => new tf.CustomCallback({
  onBatchEnd: async () => {
    for (const w of model.weights) {
      if (w.constraint != null) tf.tidy(() => w.val.assign(w.constraint.apply(w.val)));
    }
  },
});

for (const [caseName, spec] of Object.entries(CASES)) {
  const dir = path.join(outDir, caseName);
  const model = tf.sequential({name: 'mlp', layers: [
    L.dense({inputShape: [5], units: 8, activation: 'relu', name: 'hidden', ...(spec.hidden || {})}),
    L.dense({units: 3, activation: 'softmax', name: 'probs', ...(spec.probs || {})}),
  ]});
  seedWeights(model, spec.columnNorm);  // setWeights writes through LayerVariable.write, which projects
  await writeModel(model, path.join(dir, 'initial'));
  fs.writeFileSync(path.join(dir, 'data.json'), JSON.stringify(data));

  model.compile({optimizer: makeOptimizer(spec.optimizer), loss: 'categoricalCrossentropy', metrics: ['accuracy']});
  const history = await model.fit(x, y, {
    batchSize: BATCH, epochs: EPOCHS, shuffle: false, verbose: 0, callbacks: [applyConstraints(model)],
  });
  const weights = {};
  for (const w of model.weights) weights[w.originalName] = await entry(w.read());
  const result = {loss: 'categoricalCrossentropy', optimizer: spec.optimizer, batchSize: BATCH, epochs: EPOCHS,
                  history: history.history, weights};
  fs.writeFileSync(path.join(dir, 'result.json'), JSON.stringify(result));
  model.optimizer.dispose();
  model.dispose();
}
