// writeModel(model, folder): a TF.js layers model saved into folder as tf.io.browserDownloads lays it out
// (model.json and one model.weights.bin shard with a './' path), for the tests that read what TF.js writes.
import fs from 'node:fs';
import path from 'node:path';
import tf from '@tensorflow/tfjs';

export async function writeModel(model, folder) {
  fs.mkdirSync(folder, {recursive: true});
  await model.save(tf.io.withSaveHandler(async (artifacts) => {
    const weightsFile = 'model.weights.bin';
    const modelJson = {
      modelTopology: artifacts.modelTopology,
      format: artifacts.format,
      generatedBy: artifacts.generatedBy,
      convertedBy: artifacts.convertedBy,
      weightsManifest: [{paths: ['./' + weightsFile], weights: artifacts.weightSpecs}],
    };
    const weightData = tf.io.CompositeArrayBuffer.join(artifacts.weightData);
    fs.writeFileSync(path.join(folder, weightsFile), Buffer.from(weightData));
    fs.writeFileSync(path.join(folder, 'model.json'), JSON.stringify(modelJson));
    return {modelArtifactsInfo: {dateSaved: new Date(), modelTopologyType: 'JSON'}};
  }));
}
