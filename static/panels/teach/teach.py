"""The Teach panel's Python side (static/panels/teach/teach_panel.js drives it through static/panels/teach/teach_worker.js):
transfer learning on images or poses.

Image classes: each example image goes through the classifier's preprocessing and EfficientNet-Lite0's frozen body
up to its "avg_pool" layer (1280 pooled features), on the page's backend. Pose classes: MoveNet Lightning
(pe.vision.PoseDetector) finds the person's 17 keypoints, whose (x, y) divided by the image's width and height and
score make 51 features. Only the features are kept, on the host (the page keeps them across reloads and gives them
back with add_features). Training fits a small head, Dense(num_classes, softmax) on the features, with Adam. The head
saves in the TF.js layers format (model.json + its .bin shard), with the class names and what its input is in
model.json's userDefinedMetadata, and loads back from such files; for images, the full model (the body and the head,
taking a 224x224 image) saves too (teach_full_model.py).

The body is the Classify panel's model as it is loaded (folded, its unfolded weights released): predict() with
outputs="avg_pool" runs its inference plan up to that layer, so no second copy of the weights is needed.
"""

import json
import os

import numpy as np
import playground
import vision_panel

import py_engine as pe

FEATURES_LAYER = "avg_pool"
NUM_FEATURES = {"image": 1280, "pose": 51}
MIN_CLASSES, MAX_CLASSES = 2, 5
LEARNING_RATE = 0.01
BATCH_SIZE = 16


def _source():
    """Where the features come from: the playground's default classifier's layer, or the pose model."""
    if _kind == "pose":
        return {"body": "movenet-lightning"}
    return {"body": playground.CLASSIFIER_URL.rstrip("/").rsplit("/", 1)[-1], "layer": FEATURES_LAYER}


# What the saved head says about its input, for whoever loads it (TF.js: model.getUserDefinedMetadata()).
INPUT_NOTES = {
    "image": "the 1280 pooled features of EfficientNet-Lite0 (ImageNet weights, layer avg_pool): an RGB image resized to "
    "224x224 (bilinear, half-pixel centers), scaled to (x / 255 - mean) / std with mean [0.485, 0.456, 0.406] and "
    "std [0.229, 0.224, 0.225], through the network up to its global average pooling",
    "pose": "MoveNet SinglePose Lightning's 17 keypoints (nose, left_eye, right_eye, left_ear, right_ear, "
    "left_shoulder, right_shoulder, left_elbow, right_elbow, left_wrist, right_wrist, left_hip, right_hip, left_knee, "
    "right_knee, left_ankle, right_ankle), each as x / image width, y / image height and its score: 51 values",
}

_kind = "image"  # what the classes are of: "image" or "pose"
_examples = []  # (class index, float32 features [NUM_FEATURES[_kind]])
_head = None  # the trained (or loaded) head: a Sequential model
_class_names = []  # the head's classes, in its output order


def _plain(value):
    """A JS value passed from the worker (a JsProxy) as Python data."""
    return value.to_py() if hasattr(value, "to_py") else value


def set_kind(kind):
    """Classes of images or of poses from now on; another kind than before forgets the examples and the head."""
    global _kind
    if kind not in NUM_FEATURES:
        raise ValueError(f"teach: the classes are of 'image' or 'pose', got {kind!r}")
    if kind != _kind:
        reset()
        _kind = kind
    return {"kind": _kind, "counts": counts()}


async def embed(pixels, height, width, on_progress=None):
    """The features (numpy float32) of RGBA pixels (a JS Uint8Array): EfficientNet-Lite0's 1280 for images,
    MoveNet's 51 for poses."""
    if _kind == "pose":
        return await pose_features(pixels, height, width)
    return await image_features(pixels, height, width, on_progress)


async def pose_features(pixels, height, width):
    """MoveNet's 17 keypoints as 51 features: x / width, y / height and score each (the pose even when unsure)."""
    detector, _ = await vision_panel.detector("pose")  # the Vision panel's, loaded once for both
    with pe.scope():
        image = pe.browser.from_pixels(pixels, int(height), int(width))
        (pose,) = await detector.estimate_poses(image, min_pose_score=0)
    return np.array([(k.x / int(width), k.y / int(height), k.score) for k in pose.keypoints], np.float32).reshape(-1)


async def image_features(pixels, height, width, on_progress=None):
    """EfficientNet-Lite0's pooled features (numpy float32 [1280]) of RGBA pixels (a JS Uint8Array)."""
    # EfficientNet-Lite0 even when the Classify panel's model picker chose another model: the head's input is its
    # features (the picker's model is loaded again at its next classification)
    classifier = await playground.classifier(on_progress, playground.CLASSIFIER_URL)
    with pe.scope():
        x = classifier.preprocess(pe.browser.from_pixels(pixels, int(height), int(width)))
        features = await classifier.model.predict(x, outputs=FEATURES_LAYER).data()
    return np.asarray(features, np.float32).reshape(NUM_FEATURES["image"])


async def features(pixels, height, width, on_progress=None):
    """embed() as a list, for the page."""
    return (await embed(pixels, height, width, on_progress)).tolist()


def _check_class(class_index):
    index = int(class_index)
    if not 0 <= index < MAX_CLASSES:
        raise ValueError(
            f"teach: class index must be 0 to {MAX_CLASSES - 1} (at most {MAX_CLASSES} classes), got {index}"
        )
    return index


def counts():
    """How many examples each class slot holds."""
    held = [0] * MAX_CLASSES
    for index, _ in _examples:
        held[index] += 1
    return held


async def add_example(class_index, pixels, height, width, on_progress=None):
    """Add an image's features to a class; returns {counts, features} (the page keeps the features)."""
    index = _check_class(class_index)
    features = await embed(pixels, height, width, on_progress)
    _examples.append((index, features))
    return {"counts": counts(), "features": features.tolist()}


def add_features(class_index, features):
    """Add features the page kept (add_example's) to a class, as on a reload; returns {counts}."""
    index = _check_class(class_index)
    values = np.asarray(_plain(features), np.float32).reshape(-1)
    if values.size != NUM_FEATURES[_kind] or not np.all(np.isfinite(values)):
        raise ValueError(
            f"teach: a {_kind} example has {NUM_FEATURES[_kind]} finite features, got {values.size} values; clear the "
            "classes and add the examples again"
        )
    _examples.append((index, values))
    return {"counts": counts()}


def remove_class(class_index):
    """Forget the examples of one class slot; the slots after it move down by one (the page removed that class)."""
    index = _check_class(class_index)
    _examples[:] = [(i - (i > index), f) for i, f in _examples if i != index]
    return {"counts": counts()}


def _check_names(class_names):
    names = [str(n).strip() for n in _plain(class_names)]
    if not MIN_CLASSES <= len(names) <= MAX_CLASSES:
        raise ValueError(f"teach: name {MIN_CLASSES} to {MAX_CLASSES} classes, got {len(names)}")
    if any(not n for n in names) or len(set(names)) != len(names):
        raise ValueError(f"teach: every class needs a name of its own, got {names}")
    return names


async def train(class_names, epochs=30):
    """Fit a new head on the examples of the named classes; each epoch posts a "training" event to the page.

    A coroutine although it awaits nothing: called from JS, it runs as a task that may suspend (JSPI), which fit's
    per-epoch readback on webgpu needs."""
    names = _check_names(class_names)
    epochs = int(epochs)
    if not 1 <= epochs <= 1000:
        raise ValueError(f"teach: epochs must be 1 to 1000, got {epochs}")
    held = counts()
    empty = [names[i] for i in range(len(names)) if held[i] == 0]
    if empty:
        raise ValueError(f"teach: add at least one image to {', '.join(map(repr, empty))} before training")
    if any(held[len(names) :]):
        raise ValueError(f"teach: there are examples for {sum(1 for c in held[len(names) :] if c)} unnamed classes")
    x = np.stack([f for _, f in _examples])
    y = np.array([i for i, _ in _examples], np.int32)
    head = pe.Sequential(
        [pe.layers.Dense(len(names), activation="softmax", input_shape=(NUM_FEATURES[_kind],), name="teach_head")],
        name="teach_head_model",
    )
    optimizer = pe.optimizers.Adam(learning_rate=LEARNING_RATE)
    try:
        head.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        history = head.fit(
            x, y, batch_size=BATCH_SIZE, epochs=epochs, verbose=0, seed=0, callbacks=[pe.browser.training_progress()]
        )
    except BaseException:
        head.dispose()
        raise
    finally:
        optimizer.dispose()  # the head is not trained further: its moments are not needed
    _replace_head(head, names)
    return {"classes": names, "examples": len(y), "history": history.history}


def _replace_head(head, names):
    global _head, _class_names
    if _head is not None and not _head.is_disposed:
        _head.dispose()
    _head, _class_names = head, names


def _trained_head():
    if _head is None:
        raise RuntimeError("teach: no head yet: add images to each class and train, or load a downloaded head")
    if _head.is_disposed:
        raise RuntimeError("teach: the head's weights were disposed (Clear namespace or Restart): train it again")
    return _head


async def predict_features(features):
    """The head's probabilities (numpy [n, classes]) for features [n, NUM_FEATURES[kind]]."""
    head = _trained_head()
    with pe.scope():
        return np.asarray(await head.predict(np.asarray(features, np.float32)).data(), np.float32).reshape(
            -1, len(_class_names)
        )


async def predict(pixels, height, width, on_progress=None):
    """Every class of the head, best first: [{index, label, probability}]."""
    _trained_head()
    features = await embed(pixels, height, width, on_progress)
    probabilities = (await predict_features(features[None]))[0]
    order = np.argsort(-probabilities, kind="stable")
    return [{"index": int(i), "label": _class_names[i], "probability": float(probabilities[i])} for i in order]


async def save(folder):
    """Write the head into `folder` (Pyodide's file system) with its metadata; returns the file names, model.json
    first. A coroutine, as train() is: reading the weights off the GPU suspends."""
    head = _trained_head()
    saved = head.save(folder, converted_by="py_engine playground Teach panel")
    path = saved["model_json"]
    with open(path) as f:
        artifacts = json.load(f)
    artifacts["userDefinedMetadata"] = {
        "teach": {"classes": _class_names, "kind": _kind, "input": INPUT_NOTES[_kind], **_source()}
    }
    with open(path, "w") as f:
        json.dump(artifacts, f)
    return [os.path.basename(path), *(os.path.basename(p) for p in saved["shards"])]


FULL_INPUT_NOTE = (
    "a 224x224 RGB image of 0..255 (float32 [n, 224, 224, 3]; resize it first, bilinear with half-pixel centers as "
    "the page does): the model normalizes it and runs EfficientNet-Lite0 and the head"
)


async def _fetch_bytes(url):
    from pyodide.http import pyfetch  # the full model is written in the browser only

    response = await pyfetch(url)
    if not response.ok:
        raise RuntimeError(f"{url}: HTTP {response.status}")
    return await response.bytes()


async def save_full(folder):
    """Write the full model of images (EfficientNet-Lite0 and the head, a 224x224 image in; teach_full_model.py)
    into `folder`; returns the file names, model.json first."""
    import tempfile

    from teach_full_model import full_model

    head = _trained_head()
    if _kind != "image":
        raise ValueError("teach: the full model is for image classes; for poses the head is the whole model")
    url = playground.CLASSIFIER_URL
    body_json = json.loads((await _fetch_bytes(url + "model.json")).decode())
    shards = [path for group in body_json["weightsManifest"] for path in group["paths"]]
    body_weights = b"".join([await _fetch_bytes(url + path) for path in shards])
    normalize = (await playground._fetch_json(url + "metadata.json", playground.DEFAULT_METADATA))["input"]
    with tempfile.TemporaryDirectory() as saved:
        files = head.save(saved)
        with open(files["model_json"]) as f:
            head_json = json.load(f)
        head_weights = b""
        for path in files["shards"]:
            with open(path, "rb") as f:
                head_weights += f.read()
    metadata = {
        "teach": {"classes": _class_names, "kind": "image", "input": FULL_INPUT_NOTE, **_source(), "full": True}
    }
    model_json, shard = full_model(
        body_json, body_weights, head_json, head_weights, normalize["mean"], normalize["std"], metadata
    )
    (shard_name,) = model_json["weightsManifest"][0]["paths"]
    with open(os.path.join(folder, "model.json"), "w") as f:
        json.dump(model_json, f)
    with open(os.path.join(folder, shard_name), "wb") as f:
        f.write(shard)
    return ["model.json", shard_name]


async def load(folder):
    """Load a head that save() wrote (model.json and its shards in `folder`); returns its class names."""
    path = os.path.join(folder, "model.json")
    with open(path) as f:
        artifacts = json.load(f)
    metadata = artifacts.get("userDefinedMetadata", {}).get("teach", {})
    names, kind = metadata.get("classes"), metadata.get("kind", "image")
    if not isinstance(names, list):
        raise ValueError(
            "teach: this model.json has no userDefinedMetadata.teach.classes: it is not a head the Teach panel saved"
        )
    if kind not in NUM_FEATURES:
        raise ValueError(f"teach: this head's userDefinedMetadata.teach.kind is {kind!r}, not 'image' or 'pose'")
    head = await pe.load_layers_model("file://" + path)
    shape = tuple(head.inputs[0].shape)
    if shape != (None, NUM_FEATURES[kind]) or head.outputs[0].shape[-1] != len(names):
        head.dispose()
        raise ValueError(
            f"teach: the head takes {shape} and gives {head.outputs[0].shape[-1]} classes; a Teach head of {kind}s "
            f"takes (None, {NUM_FEATURES[kind]}) features and gives one probability per class of {names} (the full "
            "model of images, which takes the image, does not load here: load its head alone)"
        )
    set_kind(kind)
    _examples.clear()  # they were for the classes of the head this one replaces
    _replace_head(head, [str(n) for n in names])
    return {"classes": _class_names, "kind": _kind}


def reset():
    """Forget every example and the head."""
    global _head
    _examples.clear()
    if _head is not None and not _head.is_disposed:
        _head.dispose()
    _head = None
    return {"counts": counts()}
