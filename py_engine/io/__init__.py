"""The TensorFlow.js layers format: model.json (modelTopology + weightsManifest) and weight shards.

The writer (save, topology, weights) is below py_engine.models, whose Model.save and to_json use it; the reader
(load) builds models, so it is above them. This __init__ imports neither, so that importing the writer does not
import the reader (a cycle through models): import each from its module.
"""
