"""The package's layers show in its imports (issue 23): core < transport < run < designs < the
package's own entry points, with no import cycle anywhere, function-local imports counted; no
design module pulls in another design; and no module is over the length a reader takes in at once.

    core/       config, errors, envs, networks, replay, dqn, evaluation, metrics, limits, diagnostics
    transport/  shared memory, worker processes, the janitor, Ray support
    run/        Run (bookkeeping), ReplayLearning, acting, parking, checkpoints, results, worker rows
    designs/    one module per design (actor_learner: its local and Ray backends and its books)
"""

import ast
import json
import os
import subprocess
import sys

import pytest

from architectures import ARCHITECTURES, BACKENDS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "architectures")
DESIGN_MODULES = sorted(set(ARCHITECTURES.values()) | set(BACKENDS.values()))
LAYERS = ["core", "transport", "run", "designs", ""]
"""Lowest first; "" is the package's top level (__init__, __main__, cli), above every layer."""
MAX_LINES = 300


@pytest.mark.slow
def test_importing_one_design_loads_no_other():
    """Each design module in a fresh interpreter of its own, all started at once (one at a time
    they cost a torch import each, in turn)."""
    code = ("import json, sys, {module}; "
            f"print(json.dumps(sorted(m for m in sys.modules if m in {DESIGN_MODULES!r})))")
    procs = {module: subprocess.Popen([sys.executable, "-c", code.format(module=module)], cwd=ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for module in DESIGN_MODULES}
    loaded = {}
    for module, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        loaded[module] = json.loads(out)
    assert loaded == {module: [module] for module in DESIGN_MODULES}


def _modules() -> dict[str, str]:
    """Dotted name -> path of every module in the package."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].replace(os.sep, ".")
                found[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(folder, name)
    return found


def _imports(path: str, modules: dict[str, str]) -> set[str]:
    """The package's modules a file imports anywhere in it, function-local imports included
    (`from architectures.run import acting` names the module architectures.run.acting)."""
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "architectures":
            submodules = {f"{node.module}.{a.name}" for a in node.names} & set(modules)
            found.update(submodules or {node.module})  # `from package import module` names the module
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "architectures")
    return {m for m in found if m in modules}


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else "")


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: {d for d in _imports(path, modules) if d != m} for m, path in modules.items()}


def test_every_import_points_down_the_layers_or_within_one():
    upward = [f"{m} ({LAYERS[_layer(m)] or 'top'}) imports {d} ({LAYERS[_layer(d)] or 'top'})"
              for m, deps in _graph().items() for d in sorted(deps)
              if _layer(d) > _layer(m) and not d.endswith("__init__") and d != "architectures"]
    # The package's own __init__ is its registry, read by the entry points only.
    assert not upward, "imports that climb a layer:\n" + "\n".join(upward)


def test_the_package_has_no_import_cycle_counting_function_local_imports():
    graph = _graph()
    # A package's __init__ is imported with each of its modules; count only real dependencies.
    graph = {m: {d for d in deps if not (m.startswith(d + ".") and d in graph)} for m, deps in graph.items()}
    visiting, done = set(), set()

    def visit(module, path):
        assert module not in visiting, "import cycle: " + " -> ".join(path + [module])
        if module in done:
            return
        visiting.add(module)
        for dep in sorted(graph[module]):
            visit(dep, path + [module])
        visiting.discard(module)
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def _design(module: str) -> str | None:
    """designs/<name>.py, designs/<name>_books.py and designs/<name>/* belong to design <name>."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] != "designs":
        return None
    return parts[2].removesuffix("_books")


def test_a_design_imports_no_other_design():
    sideways = [f"{m} imports {d}" for m, deps in _graph().items() for d in sorted(deps)
                if _design(m) and _design(d) and _design(d) != _design(m)]
    assert not sideways, "\n".join(sideways)


def test_the_layer_check_would_catch_a_climbing_import(tmp_path):
    """The checks above can fail: a core module importing from run, and a cycle, are both found."""
    assert _layer("architectures.core.config") < _layer("architectures.run.base") < _layer("architectures.designs.hogwild")
    assert _layer("architectures.cli") == len(LAYERS) - 1
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from architectures.run import base\n")
    assert _imports(str(probe), _modules()) == {"architectures.run.base"}


def test_no_module_is_over_the_length_a_reader_takes_in_at_once():
    long = {m: n for m, path in _modules().items() if (n := sum(1 for _ in open(path))) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
