"""The packages' shape shows in their imports (docs/results-layout.md). In architectures/, layers: core <
transport < run < designs < the package's own entry points, and no design module pulls in another
design. In architectures/, experiments/ and analysis/: no import cycle, function-local imports
counted, and no module over the length a reader takes in at once. architectures/ never imports
Sacred (experiments/ wires it); analysis/ reads stored runs: of architectures/ it names only the
registry, and nothing it imports pulls in Sacred.

    core/       config, errors, envs, networks, replay, dqn, evaluation, metrics, limits, lifetime, diagnostics
    transport/  shared memory, worker processes, the reaper, Ray support
    run/        Run (bookkeeping), ReplayLearning, acting, sync points, checkpoints, results, worker rows
    designs/    one module per design (actor_learner: its local and Ray backends and its actor stats)
"""

import ast
import json
import os
import re
import subprocess
import sys

import pytest

from architectures import ARCHITECTURES, BACKENDS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("architectures", "experiments", "analysis")
DESIGN_MODULES = sorted(set(ARCHITECTURES.values()) | set(BACKENDS.values()))
LAYERS = ["core", "transport", "run", "designs", ""]
"""Lowest first; "" is the package's top level (__init__, __main__, cli), above every layer."""
ANALYSIS_MAY_NAME = {"architectures", "architectures.registry", "architectures.core", "architectures.core.atomic"}
"""All of architectures/ that analysis/ imports: the registry of designs (names, order, cost-model
entries), pure data, and the suite's atomic writer (standard library only); nothing that trains
(tests/test_analysis.py checks the same at run time)."""


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


def _modules(packages=PACKAGES, root: str = ROOT) -> dict[str, str]:
    """Dotted name -> path of every module in the packages under `root`."""
    found = {}
    for package in packages:
        for folder, _, files in os.walk(os.path.join(root, package)):
            for name in files:
                if name.endswith(".py"):
                    rel = os.path.relpath(os.path.join(folder, name), root)[:-3].replace(os.sep, ".")
                    found[rel.removesuffix(".__init__")] = os.path.join(folder, name)
    return found


def _tree(path: str) -> ast.AST:
    with open(path) as f:
        return ast.parse(f.read())


def _imports(path: str, modules: dict[str, str]) -> set[str]:
    """The modules of `modules` a file imports anywhere in it, function-local imports included
    (`from architectures.run import acting` names the module architectures.run.acting)."""
    tops = {m.split(".")[0] for m in modules}
    found = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in tops:
            submodules = {f"{node.module}.{a.name}" for a in node.names} & set(modules)
            found.update(submodules or {node.module})  # `from package import module` names the module
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] in tops)
    return {m for m in found if m in modules}


def _outside(path: str) -> set[str]:
    """The top-level names of what a file imports from outside the packages, anywhere in it."""
    found = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
    return found - set(PACKAGES)


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else "")


def _graph(packages=PACKAGES, root: str = ROOT) -> dict[str, set[str]]:
    modules = _modules(packages, root)
    return {m: {d for d in _imports(path, modules) if d != m} for m, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """An import cycle of `graph` as the path round it, or None. A package's __init__ is imported
    with each of its modules, so a module's import of its own package is not a dependency."""
    graph = {m: {d for d in deps if not (m.startswith(d + ".") and d in graph)} for m, deps in graph.items()}
    visiting, done = set(), set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in visiting:
            return path[path.index(module):] + [module]
        if module in done:
            return None
        visiting.add(module)
        for dep in sorted(graph[module]):
            if found := visit(dep, path + [module]):
                return found
        visiting.discard(module)
        done.add(module)
        return None

    for module in sorted(graph):
        if found := visit(module, []):
            return found
    return None


def test_every_import_points_down_the_layers_or_within_one():
    upward = [f"{m} ({LAYERS[_layer(m)] or 'top'}) imports {d} ({LAYERS[_layer(d)] or 'top'})"
              for m, deps in _graph(("architectures",)).items() for d in sorted(deps)
              if _layer(d) > _layer(m) and not d.endswith("__init__") and d != "architectures"]
    # The package's own __init__ is its registry, read by the entry points only.
    assert not upward, "imports that climb a layer:\n" + "\n".join(upward)


def test_no_package_has_an_import_cycle_counting_function_local_imports():
    """The three packages as one graph: a cycle through two of them is found too."""
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def _design(module: str) -> str | None:
    """designs/<name>.py, designs/<name>_stats.py and designs/<name>/* belong to design <name>."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] != "designs":
        return None
    return parts[2].removesuffix("_stats")


def test_a_design_imports_no_other_design():
    sideways = [f"{m} imports {d}" for m, deps in _graph(("architectures",)).items() for d in sorted(deps)
                if _design(m) and _design(d) and _design(d) != _design(m)]
    assert not sideways, "\n".join(sideways)


def test_architectures_never_imports_sacred():
    """Sacred is the experiments' wiring: a design runs, and the Python API trains, without it."""
    found = sorted(m for m, path in _modules(("architectures",)).items() if "sacred" in _outside(path))
    assert not found, f"architectures/ modules that import sacred: {found}"


def test_analysis_names_only_the_registry_of_architectures_and_never_pulls_in_sacred():
    graph = _graph()
    named = sorted(f"{m} imports {d}" for m, deps in graph.items() if m.split(".")[0] == "analysis"
                   for d in deps if d.split(".")[0] == "architectures" and d not in ANALYSIS_MAY_NAME)
    assert not named, "analysis/ imports architectures/ beyond its registry:\n" + "\n".join(named)
    # Everything an analysis module can load, its packages' __init__ included, function-local imports counted.
    reached, todo = set(), [m for m in graph if m.split(".")[0] == "analysis"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            parts = module.split(".")
            todo += [".".join(parts[:i]) for i in range(1, len(parts))] + sorted(graph[module])
    modules = _modules()
    sacred = sorted(m for m in reached if "sacred" in _outside(modules[m]))
    assert not sacred, f"analysis/ reaches modules that import sacred: {sacred}"


def test_the_checks_would_catch_a_climbing_import_and_a_cycle(tmp_path):
    """The checks above can fail: a core module importing from run is found to climb, and two
    modules importing each other, one of them inside a function, are a cycle."""
    assert _layer("architectures.core.config") < _layer("architectures.run.base") < _layer("architectures.designs.hogwild")
    assert _layer("architectures.cli") == len(LAYERS) - 1
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from architectures.run import base\n")
    assert _imports(str(probe), _modules(("architectures",))) == {"architectures.run.base"}
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "__init__.py").write_text("")
    (tmp_path / "analysis" / "a.py").write_text("import sacred\n\n\ndef f():\n    from analysis import b\n")
    (tmp_path / "analysis" / "b.py").write_text("from analysis.a import f\n")
    assert _cycle(_graph(("analysis",), str(tmp_path))) == ["analysis.a", "analysis.b", "analysis.a"]
    assert _cycle({"analysis": {"analysis.a"}, "analysis.a": {"analysis"}}) is None  # its own package: no cycle
    assert "sacred" in _outside(str(tmp_path / "analysis" / "a.py"))


def _source_files() -> list[str]:
    """Every Python file of the packages and the tests, in a fixed order."""
    return [os.path.join(folder, name) for package in (*PACKAGES, "tests")
            for folder, _, files in sorted(os.walk(os.path.join(ROOT, package))) for name in sorted(files)
            if name.endswith(".py")]


TRACKER_REFERENCE = r"\b[Ii]ssues? ?#?" + r"\d+"
"""An issue number as prose writes one; split so that this line does not match it."""


def test_no_code_points_at_the_issue_tracker():
    """The tracker is outside the repository, so a pointer to one of its issues goes stale: the code
    says why in its own words, or names a commit or a page of docs/."""
    pattern = re.compile(TRACKER_REFERENCE)
    found = []
    for path in _source_files():
        with open(path) as f:
            found += [f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}"
                      for number, line in enumerate(f, 1) if pattern.search(line)]
    assert not found, "references to the issue tracker:\n" + "\n".join(found)
    # The check can fail (its probes split as the pattern is): a number after the word, with or
    # without "#", is found; the word inside another is not.
    assert pattern.search("as issue " + "21 asked") and pattern.search("Issues #" + "3")
    assert not pattern.search("tissue " + "2")


def _private_imports(path: str) -> list[str]:
    """`from X import _name` in a file: another module's private name used as its interface."""
    return [f"{node.module}.{alias.name}" for node in ast.walk(_tree(path)) if isinstance(node, ast.ImportFrom)
            for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]


def test_no_private_name_is_imported_across_modules(tmp_path):
    """What another module needs has a public name and a docstring; a leading underscore means
    "only this module reads it", so importing one elsewhere hides the real interface."""
    found = [f"{os.path.relpath(path, ROOT)}: {n}" for path in _source_files() for n in _private_imports(path)]
    assert not found, "private names imported across modules:\n" + "\n".join(found)
    probe = tmp_path / "probe.py"  # the check can fail: a private name is found, a dunder is not
    probe.write_text("from analysis.stats import _hidden, public\nfrom x import __version__\n")
    assert _private_imports(str(probe)) == ["analysis.stats._hidden"]


def test_every_modules_root_is_the_checkout():
    """A module moved into a sub-package must still find the checkout (its git records, its
    subprocesses' cwd, results/): a ROOT one folder short made the dirty-tree check look at
    experiments/ alone, and nothing else failed."""
    import importlib

    found = {}
    for module, path in _modules().items():
        with open(path) as f:
            if not re.search(r"^(ROOT|REPO) = ", f.read(), re.M):
                continue
        loaded = importlib.import_module(module)
        root = getattr(loaded, "ROOT", None) or getattr(loaded, "REPO")
        found[module] = os.path.realpath(root)
    assert found and {m: r for m, r in found.items() if r != os.path.realpath(ROOT)} == {}
