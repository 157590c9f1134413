"""Every module of the three packages imports, in this process: the floor of the quick check
(`pytest -m "not slow"`), which runs no benchmark script and no end-to-end plan, so a module that
no longer imports (a renamed helper, a syntax error) fails here in seconds, not in the full suite."""

import importlib
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("architectures", "experiments", "analysis")


def _modules() -> list[str]:
    """Every .py file under the packages as a dotted name (folders without an __init__ too)."""
    found = []
    for package in PACKAGES:
        for folder, _, names in os.walk(os.path.join(ROOT, package)):
            for name in names:
                if name.endswith(".py") and name != "__main__.py":  # running, not importing: the CLI tests run them
                    dotted = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].replace(os.sep, ".")
                    found.append(dotted.removesuffix(".__init__"))
    return sorted(found)


@pytest.mark.parametrize("module", _modules())
def test_every_module_imports(module):
    assert importlib.import_module(module).__name__ == module
