"""py_engine's modules import each other without cycles, counting imports inside functions too.

A cycle works only in one import order and breaks in another (a half-initialised module has no names yet); a
function-level import that dodges one hides the same knot. The graph is read from the source (AST), so a
module's imports count whether or not they run. An edge goes to the module named: `from .ops.math import add`
and `from .ops import math` reach py_engine.ops.math, `from .ops import add` reaches py_engine.ops (its
__init__). As in Python, importing a.b.c first runs the __init__ of every package on the way (a, a.b), so
an edge also goes to each of those. A module's import of a package it is itself inside is left out: that
package is already running.

The engine and the backends meet only at the backend protocol: a backend-neutral module (ops, layers, models,
train, io, vision, the engine, ...) never imports a backend, so it runs the same on each; only `py_engine/__init__.py`,
which registers them with the engine, imports one. A backend builds only on the layer below the engine
(BELOW_BACKENDS: the errors, dtypes, kernel registry, backend protocols and the formulas kernels share with ops): it
is given handles, shapes and dtypes, never tensors or the engine.

Packages side by side must not import each other either, even where no module loops: `io` importing `models`
while `models` imports `io` means neither can be read, moved or tested without the other. Within each package,
its modules and subpackages are the nodes, and one reaches another when any module inside it imports any
module inside the other.
"""

import ast
import itertools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "py_engine"
# what a backend may import outside backends/ (docs/design.md, "How the package is layered")
BELOW_BACKENDS = ("backend_protocols", "dtypes", "errors", "kernel_registry", "selu_constants", "window_output_size")


def module_name(path, root):
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root):
    """{module: {imported module: line of the first import}} for every module under `root`."""
    paths = {module_name(p, root): p for p in root.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, package, paths):
                for reached in sorted(_packages_around(target) - _packages_around(name)):
                    edges.setdefault(reached, node.lineno)
        graph[name] = edges
    return graph


def _targets(node, package, modules):
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    found = []
    for alias in node.names:
        if f"{source}.{alias.name}" in modules:  # `from pkg import submodule`
            found.append(f"{source}.{alias.name}")
        elif source in modules:
            found.append(source)
    return found


def _packages_around(module):
    """The module and every package it is inside (whose __init__ runs before it)."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def cycles(graph):
    """Each strongly connected component of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next((w for w in edges if w in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def describe(component, graph):
    inside = set(component)
    return "\n".join(
        f"  {m} imports {', '.join(f'{t} (line {line})' for t, line in sorted(graph[m].items()) if t in inside)}"
        for m in component
    )


def package_graphs(graph):
    """{package: {part: {part: (importing module, imported module, line)}}}: for every package, how its parts (its
    modules and subpackages) import each other, each edge with the first import that makes it."""
    packages = {m.rpartition(".")[0] for m in graph if "." in m}
    found = {}
    for package in sorted(packages):
        prefix = package + "."

        def part(module, prefix=prefix):
            return prefix + module[len(prefix) :].split(".")[0] if module.startswith(prefix) else None

        parts = {part(m): {} for m in graph if part(m)}
        for module in sorted(graph):
            here = part(module)
            for target, line in sorted(graph[module].items(), key=lambda edge: (-len(edge[0]), edge[0])):
                there = part(target)  # the module imported, rather than the packages on its way
                if here and there and there != here:
                    parts[here].setdefault(there, (module, target, line))
        found[package] = parts
    return found


def a_cycle(component, graph):
    """The shortest loop from the component's first node back to it, as [first, ..., first] (breadth first)."""
    start, inside = component[0], set(component)
    paths, queue = {start: [start]}, [start]
    for node in queue:
        for nxt in sorted(graph[node]):
            if nxt == start:
                return paths[node] + [start]
            if nxt in inside and nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                queue.append(nxt)
    raise AssertionError(f"{component} is not a cycle")


def describe_package_cycle(component, graph):
    loop = a_cycle(component, graph)
    steps = [graph[a][b] for a, b in itertools.pairwise(loop)]
    return "  " + " -> ".join(loop) + "".join(f"\n    {m} imports {t} (line {line})" for m, t, line in steps)


def package_cycles(graph):
    """A description of each cycle among the parts of any package; empty when there is none."""
    return [
        describe_package_cycle(component, parts)
        for parts in package_graphs(graph).values()
        for component in cycles(parts)
    ]


def boundary_crossings(graph, package):
    """Each import that crosses the engine/backend boundary the wrong way: a module outside `package`.backends
    (other than `package` itself, which registers the backends) importing one inside, and a module inside importing
    one outside that is not BELOW_BACKENDS."""
    backends = f"{package}.backends"
    below = {f"{package}.{name}" for name in BELOW_BACKENDS}

    def is_backend(module):
        return module == backends or module.startswith(backends + ".")

    found = []
    for module, edges in sorted(graph.items()):
        for target, line in sorted(edges.items()):
            if not is_backend(module) and is_backend(target) and module != package:
                found.append(f"  {module} imports {target} (line {line}): backend-neutral code imports a backend")
            elif is_backend(module) and not is_backend(target) and target not in below:
                found.append(
                    f"  {module} imports {target} (line {line}): a backend builds only on {', '.join(BELOW_BACKENDS)}"
                )
    return found


def test_py_engine_has_no_import_cycles():
    graph = import_graph(ROOT)
    assert "py_engine.engine.core" in graph and "py_engine.ops.gradients.math" in graph
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n\n".join(describe(c, graph) for c in found)


def test_py_engine_packages_have_no_import_cycles():
    graph = import_graph(ROOT)
    parts = package_graphs(graph)
    assert "py_engine.models" in parts["py_engine"] and "py_engine.ops.gradients" in parts["py_engine.ops"]
    found = package_cycles(graph)
    assert not found, (
        "packages side by side that import each other (move what one needs from the other below both):\n"
        + "\n".join(found)
    )


def test_backend_neutral_code_never_imports_a_backend_and_backends_see_no_engine():
    graph = import_graph(ROOT)
    assert {"py_engine.backends.webgpu.capture", "py_engine.engine.capture", "py_engine.ops.creation"} <= set(graph)
    assert "py_engine.backends.numpy" in graph["py_engine"]  # the package's __init__ registers the backends
    found = boundary_crossings(graph, "py_engine")
    assert not found, (
        "imports across the engine/backend boundary (go through backend_protocols.Backend and the engine's "
        "public methods; move what both need below the engine):\n" + "\n".join(found)
    )


def test_a_boundary_crossing_either_way_is_named_with_its_line(tmp_path):
    package = tmp_path / "pkg"
    for folder in ("backends", "backends/gpu", "engine"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from .backends.gpu import GpuBackend\n")
    (package / "errors.py").write_text("")
    (package / "ops.py").write_text("import math\n\n\ndef f():\n    from .backends.gpu import capture\n")
    (package / "backends" / "gpu" / "capture.py").write_text("from ...errors import E\nfrom ...engine import ENGINE\n")
    assert boundary_crossings(import_graph(package), "pkg") == [
        "  pkg.backends.gpu.capture imports pkg.engine (line 2): a backend builds only on " + ", ".join(BELOW_BACKENDS),
        "  pkg.ops imports pkg.backends (line 5): backend-neutral code imports a backend",
        "  pkg.ops imports pkg.backends.gpu (line 5): backend-neutral code imports a backend",
        "  pkg.ops imports pkg.backends.gpu.capture (line 5): backend-neutral code imports a backend",
    ]


def test_a_function_level_import_that_closes_a_loop_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from . import c\n")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("from . import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from ..a import g\n")
    (package / "c.py").write_text("from .sub import helper\n")
    graph = import_graph(package)
    assert graph["pkg"] == {"pkg.c": 1}
    assert graph["pkg.sub.b"] == {"pkg.a": 2}
    assert graph["pkg.c"] == {"pkg.sub": 1}
    assert graph["pkg.a"] == {"pkg.sub": 1, "pkg.sub.b": 1}  # pkg/sub/__init__.py runs first
    assert cycles(graph) == [["pkg.a", "pkg.sub", "pkg.sub.b"]]


def test_a_cycle_through_a_package_init_on_the_way_is_found(tmp_path):
    # pkg.models imports pkg.io.topology, which first runs pkg/io/__init__.py, which imports pkg.io.load,
    # which imports pkg.models: a cycle although topology itself imports nothing.
    package = tmp_path / "pkg"
    (package / "io").mkdir(parents=True)
    (package / "models").mkdir()
    (package / "__init__.py").write_text("from . import io, models\n")
    (package / "io" / "__init__.py").write_text("from .load import load\n")
    (package / "io" / "load.py").write_text("from ..models import Model\n")
    (package / "io" / "topology.py").write_text("")
    (package / "models" / "__init__.py").write_text("from ..io.topology import model_topology\n")
    graph = import_graph(package)
    assert graph["pkg.models"] == {"pkg.io": 1, "pkg.io.topology": 1}
    assert graph["pkg.io.load"] == {"pkg.models": 1}
    assert cycles(graph) == [["pkg.io", "pkg.io.load", "pkg.models"]]


def test_packages_that_import_each_other_are_named_with_the_imports_that_do_it(tmp_path):
    # No module loops (io.load -> models.core, models.core -> io.save), but the packages io and models do; inside
    # pkg.models, the subpackages a and b do too.
    package = tmp_path / "pkg"
    for folder in ("io", "models", "models/a", "models/b"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "io" / "load.py").write_text("from ..models import core\n")
    (package / "io" / "save.py").write_text("")
    (package / "models" / "core.py").write_text("import json\n\nfrom ..io.save import save\n")
    (package / "models" / "a" / "x.py").write_text("def f():\n    from ..b.y import g\n")
    (package / "models" / "b" / "y.py").write_text("")
    (package / "models" / "b" / "z.py").write_text("from ..a import x\n")
    graph = import_graph(package)
    assert cycles(graph) == []
    assert package_graphs(graph)["pkg"] == {
        "pkg.io": {"pkg.models": ("pkg.io.load", "pkg.models.core", 1)},
        "pkg.models": {"pkg.io": ("pkg.models.core", "pkg.io.save", 3)},
    }
    assert package_cycles(graph) == [
        "  pkg.io -> pkg.models -> pkg.io\n    pkg.io.load imports pkg.models.core (line 1)\n"
        "    pkg.models.core imports pkg.io.save (line 3)",
        "  pkg.models.a -> pkg.models.b -> pkg.models.a\n    pkg.models.a.x imports pkg.models.b.y (line 2)\n"
        "    pkg.models.b.z imports pkg.models.a.x (line 1)",
    ]
