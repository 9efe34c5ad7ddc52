"""Loading a task's graph model and checking it is the kind of model the task decodes."""

from ..models.graph_model import load_graph_model


async def load_task_model(task, url_or_path, input_shape, output_shapes):
    """The graph model at url_or_path (a folder, its JSON file, or a URL), checked against the input shape and the
    output shapes (in the model's output order; -1: any size) the task reads; the model is disposed if it is not."""
    model = await load_graph_model(url_or_path)
    found = [model.inputs[0].shape, *(o.shape for o in model.outputs)]
    expected = [input_shape, *output_shapes]
    fits = len(model.inputs) == 1 and len(found) == len(expected)
    fits = fits and all(_fits(f, e) for f, e in zip(found, expected, strict=True))
    if not fits:
        model.dispose()
        raise ValueError(
            f"{task}: {url_or_path} is not the model this task reads: it takes {[i.shape for i in model.inputs]} "
            f"and gives {[o.shape for o in model.outputs]}, expected one input {input_shape} and outputs "
            f"{list(output_shapes)} (see docs/vision.md for each task's model)"
        )
    return model


def _fits(shape, expected):
    return len(shape) == len(expected) and all(e == -1 or s in (e, -1) for s, e in zip(shape, expected, strict=True))


async def read(t):
    """A tensor's values on the host, as a nested list of Python numbers of its shape (one readback)."""
    return (await t.data()).reshape(t.shape).tolist()
