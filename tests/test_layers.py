"""The layers import downward only (docs/conventions.md, "Where the code lives"): no import circles, no import from
a lower layer to a higher one, a bounded number of import floors, and time loops that know no formulation by name.
Imports are read from the source (module level and inside functions alike)."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "recursive_mbd"


def _modules():
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _imports(name, path, modules):
    """The package modules that ``name`` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.update(c for c in [target, *(f"{target}.{a.name}" for a in node.names)] if c in modules)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
    packages = {other for other, source in modules.items() if source.name == "__init__.py"}
    return found - {name} - packages


def _circles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while not component or v not in component:
                component.add(stack.pop())
            on_stack.difference_update(component)
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


# The layers, bottom to top: a module may import its own layer and the layers below it, never one above.
LAYERS = (
    ("recursive_mbd.errors", "recursive_mbd._checks"),  # the foundation: exceptions and argument checks
    ("recursive_mbd._kernels",),  # numba kernels: pure functions of arrays
    ("recursive_mbd.model",),  # builders: planar and spatial models, chains, joint types
    ("recursive_mbd.dynamics",),  # per-call functions, loop layers, the augmented formulation, batch calls
    ("recursive_mbd.integrate",),  # simulate, the run machinery, implicit and bdf front ends, ensembles, sweeps
    ("recursive_mbd.analysis",),  # assembly, kinematics, statics, modes, mechanisms, reference models, studies
    ("recursive_mbd.files",),  # model files, decks, result files
    ("recursive_mbd.plot", "recursive_mbd.cli", "recursive_mbd.__main__",
     "recursive_mbd.warmup"),  # pictures, the command line and its compile-ahead jobs
)
# Inside the kernels: the shared layouts below the formulations, the compiled time loops beside them.
KERNEL_LAYERS = (
    ("recursive_mbd._kernels.cache",),  # where numba caches them: imported by every module that declares kernels
    ("recursive_mbd._kernels.layout", "recursive_mbd._kernels.trig", "recursive_mbd._kernels.joint_types",
     "recursive_mbd._kernels.contact_law"),
    # the planar tree's absolute-coordinate rows and its sparse KKT factorisation: below both the recursive loop layer
    # and the augmented tree solver, which assemble the same matrix
    ("recursive_mbd._kernels.sparse_kkt",),
    ("recursive_mbd._kernels.timeloops", "recursive_mbd._kernels.planar"),
    ("recursive_mbd._kernels.spatial", "recursive_mbd._kernels.augmented"),
)
# The longest chains of imports, from a kernel's constants to ``python -m recursive_mbd``: three floors of kernels
# (constants, the tree, its one-signature entry; the spatial entry builds on the planar one), two of dynamics (the
# spatial evaluation, the kinematics and energy that results report), three of integrate (the result, the Newton
# bookkeeping of the implicit methods, their front ends) and ``simulate``; beside it the spatial loop layer, assembly,
# ``Mechanism``, the deck reader and the file reader; the compile-ahead jobs (``warmup``) on simulate. Then the command
# line and its launcher: eleven imports from the kernels to the command line. It may shrink, never grow.
MAX_FLOORS = 13
CACHE = "recursive_mbd._kernels.cache"


def _layer(name, layers):
    for level, prefixes in enumerate(layers):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return level
    return None


def _floors(graph):
    """The floor of each module: 1 + the highest floor among the modules it imports."""
    floors = {}

    def floor(name):
        if name not in floors:
            floors[name] = 1 + max((floor(m) for m in graph[name]), default=0)
        return floors[name]

    for name in graph:
        floor(name)
    return floors


def test_no_import_circles():
    assert _circles(_graph()) == []


def test_every_module_has_a_layer_and_imports_only_its_own_and_lower_ones():
    graph = _graph()
    for layers in (LAYERS, KERNEL_LAYERS):
        for name, imported in graph.items():
            level = _layer(name, layers)
            if layers is LAYERS:
                assert level is not None or name == "recursive_mbd", f"{name} belongs to no layer"
            if level is None:
                continue
            for other in imported:
                other_level = _layer(other, layers)
                assert other_level is None or other_level <= level, f"{name} imports {other}, a higher layer"


def test_at_least_four_layers_are_subpackages_besides_the_kernels():
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")} - {"_kernels"}
    assert len(packages) >= 4, packages


def test_the_import_floors_from_the_kernels_to_the_command_line_are_few():
    # the cache locator is configuration every kernel module imports first, not a floor of the code
    graph = {name: imported - {CACHE} for name, imported in _graph().items() if name != CACHE}
    floors = _floors(graph)
    highest = max(floors.values())
    chain = max(floors, key=floors.get)
    assert highest <= MAX_FLOORS, f"{highest} import floors (up to {chain})"


def test_the_method_front_ends_build_on_the_run_machinery_not_on_simulate():
    graph = _graph()
    for method_module in ("implicit", "spatial_implicit", "bdf", "runs"):
        assert "recursive_mbd.integrate.simulate" not in graph[f"recursive_mbd.integrate.{method_module}"]


def test_the_compiled_time_loops_know_no_formulation():
    graph = _graph()
    assert graph["recursive_mbd._kernels.timeloops.integrators"] == {"recursive_mbd._kernels.timeloops.formulation",
                                                                     "recursive_mbd._kernels.layout", CACHE,
                                                                     "recursive_mbd._kernels.arrays"}
    assert graph["recursive_mbd._kernels.timeloops.formulation"] == set()
    for formulation in ("planar", "spatial", "augmented"):  # each implements the interface, not the loops
        system = graph[f"recursive_mbd._kernels.{formulation}.system"]
        assert "recursive_mbd._kernels.timeloops.integrators" not in system
    assert not any(m.startswith("recursive_mbd.integrate") for m in graph["recursive_mbd.dynamics.augmented"])
    # the loop layer builds on the shared evaluation pieces, not on the public tree entry that dispatches to it
    assert "recursive_mbd.dynamics.calls" not in graph["recursive_mbd.dynamics.loops"]
    assert "recursive_mbd.dynamics.loops" in graph["recursive_mbd.dynamics.calls"]


def test_the_time_loop_kernels_import_alone_in_a_fresh_interpreter():
    code = ("import sys\nimport recursive_mbd._kernels.timeloops.integrators\n"
            "print(*sorted(m for m in sys.modules if m.startswith('recursive_mbd.') and m != 'recursive_mbd.errors'))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                            env={"PYTHONPATH": str(ROOT), "PATH": ""}).stdout.split()
    assert loaded == ["recursive_mbd._kernels", "recursive_mbd._kernels.arrays", CACHE, "recursive_mbd._kernels.layout",
                      "recursive_mbd._kernels.timeloops", "recursive_mbd._kernels.timeloops.formulation",
                      "recursive_mbd._kernels.timeloops.integrators"]
