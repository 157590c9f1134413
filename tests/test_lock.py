"""requirements.lock, the exact versions ./setup.sh installs, is the set the committed reference runs
ran with (each run's record names its packages), and it satisfies pyproject.toml's ranges and
constraints.txt's pins, so a fresh install reproduces the recorded runs' software."""

import glob
import json
import os
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECT = "parallel-dqn-study"


def _pins(path: str) -> dict[str, str]:
    """name -> version of every `name==version` line."""
    pins = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, sep, version = line.partition("==")
                assert sep and version, f"{os.path.basename(path)}: {line!r} is not an exact pin"
                pins[canonicalize_name(name)] = version
    return pins


LOCK = _pins(os.path.join(ROOT, "requirements.lock"))


def _recorded() -> dict[str, dict[str, set[str]]]:
    """name -> version -> the reference runs that recorded it (Sacred's host packages and the
    experiment's dependencies). Stores brought from another machine (analysis/io/stores.py MACHINE_FILE)
    ran with that machine's packages, which they record; the lock is this suite's install."""
    from analysis.io.load import machine_of

    found: dict[str, dict[str, set[str]]] = {}
    for path in glob.glob(os.path.join(ROOT, "results", "reference", "**", "run.json"), recursive=True):
        if machine_of(os.path.dirname(path)):
            continue
        with open(path) as f:
            record = json.load(f)
        named = dict(record.get("host", {}).get("packages", {}))
        for dependency in record.get("experiment", {}).get("dependencies", []):
            name, _, version = dependency.partition("==")
            named[name] = version
        for name, version in named.items():
            if canonicalize_name(name) != PROJECT and version != "not installed":
                found.setdefault(canonicalize_name(name), {}).setdefault(version, set()).add(os.path.relpath(path, ROOT))
    return found


def _disagreements(lock: dict[str, str], recorded: dict[str, dict[str, set[str]]]) -> list[str]:
    out = []
    for name, versions in sorted(recorded.items()):
        for version, runs in versions.items():
            # torch's CPU build records its local label (2.13.0+cpu); the lock pins 2.13.0 as
            # constraints.txt does, which on the machines resolves to that build.
            if name not in lock or Version(lock[name]) != Version(Version(version).public):
                out.append(f"{name}: {len(runs)} runs recorded {version} (e.g. {min(runs)}), "
                           f"the lock has {lock.get(name, 'nothing')}")
    return out


def test_the_lock_pins_what_every_reference_run_recorded():
    recorded = _recorded()
    assert {"torch", "numpy", "gymnasium", "minatar", "sacred", "pymongo"} <= set(recorded), sorted(recorded)
    assert sum(len(runs) for runs in recorded["torch"].values()) >= 100  # the reference runs were read
    disagree = _disagreements(LOCK, recorded)
    assert not disagree, "\n".join(disagree)


def test_the_comparison_catches_a_drifted_or_missing_pin():
    recorded = {"numpy": {"2.4.6": {"a/run.json"}}, "torch": {"2.13.0+cpu": {"b/run.json"}}}
    assert _disagreements({"numpy": "2.4.6", "torch": "2.13.0"}, recorded) == []
    assert _disagreements({"numpy": "2.4.7", "torch": "2.14.0"}, recorded) == [
        "numpy: 1 runs recorded 2.4.6 (e.g. a/run.json), the lock has 2.4.7",
        "torch: 1 runs recorded 2.13.0+cpu (e.g. b/run.json), the lock has 2.14.0"]
    assert _disagreements({"torch": "2.13.0"}, recorded) == [
        "numpy: 1 runs recorded 2.4.6 (e.g. a/run.json), the lock has nothing"]


def test_the_lock_covers_pyproject_and_satisfies_its_ranges_and_the_constraints():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    installed = project["dependencies"] + project["optional-dependencies"]["test"] + \
        project["optional-dependencies"]["ray"]  # what setup.sh installs
    constraints = [line.split("#", 1)[0].strip() for line in open(os.path.join(ROOT, "constraints.txt"))]
    outside = []
    for spec in installed + [c for c in constraints if c]:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        if name not in LOCK or not req.specifier.contains(LOCK[name], prereleases=True):
            outside.append(f"{spec}: the lock has {LOCK.get(name, 'nothing')}")
    assert not outside, "\n".join(outside)
    assert PROJECT not in LOCK and "pip" not in LOCK  # the project itself and the installer are not pinned
