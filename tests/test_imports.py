"""The architecture files form no import cycle, and each design's module pulls in no other design.

Shared mechanics live in their own modules (loop, actors, workers, shared, ray_support), so
`diff` between two architecture files shows their data flow and nothing imports sideways.
"""

import ast
import json
import os
import subprocess
import sys

import pytest

from architectures import ARCHITECTURES, BACKENDS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DESIGN_MODULES = sorted(set(ARCHITECTURES.values()) | set(BACKENDS.values()))


@pytest.mark.parametrize("module", DESIGN_MODULES)
def test_importing_one_design_loads_no_other(module):
    code = (f"import json, sys, {module}; "
            f"print(json.dumps(sorted(m for m in sys.modules if m in {DESIGN_MODULES!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [module]


def _imports(path: str) -> set[str]:
    """The architectures.* modules a file imports at module level (imports inside functions are
    deferred on purpose and cannot form a load-time cycle)."""
    found = set()
    for node in ast.parse(open(path).read()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("architectures"):
            found.add(node.module)
            found.update(f"architectures.{a.name}" for a in node.names if node.module == "architectures")
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("architectures."))
    return found


def test_the_architectures_package_has_no_import_cycle():
    folder = os.path.join(ROOT, "architectures")
    graph = {f"architectures.{name[:-3]}": _imports(os.path.join(folder, name))
             for name in os.listdir(folder) if name.endswith(".py") and name != "__init__.py"}
    graph = {module: {d for d in deps if d in graph and d != module} for module, deps in graph.items()}
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
