"""The layers call downward only (DESIGN.md, "Architecture"): no import circles, and the time loops know no
formulation by name. Imports are read from the source (module level and inside functions alike)."""

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




def test_the_time_loops_and_the_formulations_are_in_no_import_circle():
    graph = _graph()
    circles = _circles(graph)
    assert circles == []
    # the formulations, the kernels and the time loops (integrate dispatches down to implicit and bdf, which share
    # the run machinery of _runs below all three) in none at all
    layered = {"recursive_mbd.augmented", "recursive_mbd._checks", "recursive_mbd.model", "recursive_mbd.dynamics",
               "recursive_mbd.loops", "recursive_mbd._evaluation", "recursive_mbd.integrate",
               "recursive_mbd.implicit", "recursive_mbd.bdf", "recursive_mbd._runs"}
    layered |= {name for name in graph if name.startswith("recursive_mbd._kernels")}
    for component in circles:
        assert not component & layered, f"import circle {sorted(component)}"
    for method_module in ("recursive_mbd.implicit", "recursive_mbd.bdf", "recursive_mbd._runs"):
        assert "recursive_mbd.integrate" not in graph[method_module], f"{method_module} imports integrate"


def test_the_compiled_time_loops_know_no_formulation():
    graph = _graph()
    assert graph["recursive_mbd._kernels.integrators"] == {"recursive_mbd._kernels.formulation",
                                                           "recursive_mbd._kernels.layout"}
    assert graph["recursive_mbd._kernels.formulation"] == set()
    for formulation in ("recursive_system", "augmented_system"):  # each implements the interface, not the loops
        assert "recursive_mbd._kernels.integrators" not in graph[f"recursive_mbd._kernels.{formulation}"]
    assert "recursive_mbd.integrate" not in graph["recursive_mbd.augmented"]
    # the loop layer builds on the shared evaluation pieces, not on the public tree entry that dispatches to it
    assert "recursive_mbd.dynamics" not in graph["recursive_mbd.loops"]
    assert "recursive_mbd.loops" in graph["recursive_mbd.dynamics"]


def test_the_time_loop_kernels_import_alone_in_a_fresh_interpreter():
    code = ("import sys\nimport recursive_mbd._kernels.integrators\n"
            "print(*sorted(m for m in sys.modules if m.startswith('recursive_mbd.') and m != 'recursive_mbd.errors'))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                            env={"PYTHONPATH": str(ROOT), "PATH": ""}).stdout.split()
    assert loaded == ["recursive_mbd._kernels", "recursive_mbd._kernels.formulation",
                      "recursive_mbd._kernels.integrators", "recursive_mbd._kernels.layout"]
