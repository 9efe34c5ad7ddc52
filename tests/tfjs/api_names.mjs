// node api_names.mjs OUT.json: the names TF.js's layers API offers, read from the real TF.js (tests/tfjs_coverage.py
// checks each has a counterpart in py_engine). Every list comes from TF.js itself: its exports (tf.layers,
// tf.initializers, tf.regularizers, tf.constraints, tf.metrics, tf.train), its serialization registry (class names,
// activations), its own source for the loss and metric names compile takes (lossesMap, metricsMap: not exported),
// each name confirmed by compile; aliases are folded by what the factory makes (avgPool2d -> AveragePooling2D).
import fs from 'node:fs';
import {createRequire} from 'node:module';
import path from 'node:path';
import tf from '@tensorflow/tfjs';

const classes = tf.serialization.SerializationMap.getMap().classNameMap;  // class name -> [class, fromConfig]
const registered = (name) => name in classes;
const baseOf = (instance) => Object.getPrototypeOf(Object.getPrototypeOf(instance)).constructor;
const subclassesOf = (base) =>
  Object.keys(classes).filter((name) => classes[name][0].prototype instanceof base).sort();

// A Dense layer using `options`, as model.json holds it (snake_case, TF.js's serialized names).
function denseConfig(options) {
  const model = tf.sequential({layers: [tf.layers.dense({units: 3, inputShape: [3], ...options})]});
  return model.toJSON(null, false).config.layers[0].config;
}

// ---- layers: every export of tf.layers, each factory called with one config that every layer accepts --------
function layerArgs() {
  return {
    units: 2, filters: 2, kernelSize: 1, rate: 0.5, stddev: 1, targetShape: [2], dims: [1], n: 2, axes: 1,
    scale: 1, height: 2, width: 2, numTokens: 2, factor: 0.1, cropping: 1, inputShape: [2], shape: [2],
    inputDim: 2, outputDim: 2, cell: tf.layers.simpleRNNCell({units: 2}), layer: tf.layers.dense({units: 2}),
  };
}
const layers = Object.entries(tf.layers).map(([name, make]) => {
  let className;
  if (/^[A-Z]/.test(name)) {
    className = make.className || make.name;  // a class (Layer, RNN, RNNCell): for subclassing
  } else {
    let made;
    try {
      made = make(layerArgs());
    } catch (e) {
      throw new Error(`tf.layers.${name} refuses layerArgs() (${e.message}): add what it needs there`);
    }
    className = (made.sourceLayer || made).getClassName();  // input() gives a SymbolicTensor of an InputLayer
  }
  return {name, class_name: className, registered: registered(className)};
});

// ---- activations: the classes of the registry that are activations, by TF.js's name and as model.json holds it --
const activationBase = baseOf(tf.layers.activation({activation: 'relu'}).activation);
const activations = subclassesOf(activationBase).map((name) => {
  const model = tf.sequential({layers: [tf.layers.activation({activation: name, inputShape: [2]})]});
  return {name, serialized: model.toJSON(null, false).config.layers[0].config.activation};
});

// ---- initializers, regularizers, constraints: factories (as a Dense layer's config holds what they make) and the
// registry's classes of each kind ---------------------------------------------------------------------------------
function family(factories, key, args, example) {
  const made = Object.entries(factories).map(([name, make]) => {
    const instance = make(args);
    return {name, class_name: instance.constructor.className, serialized: denseConfig({[key]: instance})[
      key.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase())]};
  });
  return {factories: made, classes: subclassesOf(baseOf(example))};
}
const initializers = family(tf.initializers, 'kernelInitializer', {value: 0.5, gain: 1, seed: 7},
  tf.initializers.zeros());
const regularizers = family(tf.regularizers, 'kernelRegularizer', {l1: 0.01, l2: 0.02}, tf.regularizers.l1l2());
const constraints = family(tf.constraints, 'kernelConstraint', {maxValue: 2, minValue: 0.5, rate: 1, axis: 0},
  tf.constraints.nonNeg());

// ---- losses and metrics: the maps compile resolves names with (tfjs-layers' own source), each name confirmed ----
const layersDist = path.dirname(createRequire(import.meta.url).resolve('@tensorflow/tfjs-layers'));
function mapKeys(file, map) {
  const source = fs.readFileSync(path.join(layersDist, file), 'utf8');
  const body = source.match(new RegExp(`export const ${map} = \\{([^}]*)\\}`));
  if (!body) throw new Error(`${map} is no longer in tfjs-layers/dist/${file}: update api_names.mjs`);
  return body[1].split(',').map((entry) => entry.split(':')[0].trim()).filter(Boolean);
}
function compiles(options) {
  const model = tf.sequential({layers: [tf.layers.dense({units: 1, inputShape: [1]})]});
  model.compile({optimizer: 'sgd', loss: 'meanSquaredError', ...options});
}
const losses = mapKeys('losses.js', 'lossesMap');
losses.forEach((loss) => compiles({loss}));
const metricNames = mapKeys('metrics.js', 'metricsMap');
metricNames.forEach((name) => compiles({metrics: [name]}));
const metrics = {compile_names: metricNames, functions: Object.keys(tf.metrics)};

// ---- optimizers: tf.train's factories (with the class and config each makes) and the names compile takes -------
const optimizerFactories = Object.entries(tf.train).map(([name, make]) => {
  const optimizer = make(0.1, 0.9);
  return {name, class_name: optimizer.getClassName(), config: optimizer.getConfig()};
});
const optimizerNames = [...new Set(optimizerFactories.flatMap(({name, class_name}) => [name, class_name]))]
  .filter((name) => {
    try {
      compiles({optimizer: name});
      return true;
    } catch (e) {
      return false;  // a factory TF.js's compile has no string for (momentum needs its momentum)
    }
  });
const optimizers = {factories: optimizerFactories, compile_names: optimizerNames};

fs.writeFileSync(process.argv[2], JSON.stringify(
  {version: tf.version.tfjs, layers, activations, initializers, regularizers, constraints, losses, metrics, optimizers},
  null, 1));
