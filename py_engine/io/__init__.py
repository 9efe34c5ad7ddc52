"""The TensorFlow.js layers format: model.json (modelTopology + weightsManifest) and weight shards.

Below py_engine.models, and knowing none: Model.save and to_json write through save and topology, and
py_engine.models.loading builds a model from what fetch reads and weights_manifest unpacks. This __init__ imports none
of its modules, so that importing one (the writer, say) does not import the others: import each from its module.
"""
