"""What every tracked experiment records about the machine it ran on, beside Sacred's own host
info: cores, the CPU's model name, the versions of the packages that set a run's speed, the
thread variables that change torch's, and the commit. The three Sacred experiments (train,
timing, components) attach HOST_INFO; plan and on_device, which write plain JSON, call
cpu_model() so every record names the CPU the same way (tests/test_experiment.py)."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata

from sacred.host_info import host_info_gatherer

PACKAGES = ("torch", "numpy", "gymnasium", "minatar", "sacred", "pymongo")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TORCH_NUM_THREADS")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("AMD EPYC ..."); platform.processor() elsewhere,
    which on Linux often says only the architecture."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def packages() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def thread_env() -> dict[str, str | None]:
    return {name: os.environ.get(name) for name in THREAD_VARIABLES}


def commit() -> str | None:
    """The checkout's HEAD, or None outside a git checkout (records and predictions name it)."""
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


NOT_SOURCE = ("results", "paper")
"""Run outputs and the writeup: no run reads them, so a change there leaves a run's tree clean
(a sweep into results/reference/ adds its own runs there while it runs)."""
SOURCE_SUFFIXES = (".py", ".toml", ".cfg", ".ini", ".txt", ".sh", ".lock", ".yaml", ".yml", ".json")
"""An untracked file with one of these endings is source a run may have imported or read."""
SOURCE_DIFF = "source.diff"
"""The artifact a run from a dirty tree stores beside its record: `git apply` on its commit gives its tree."""


def _git(*args: str, ok: tuple[int, ...] = (0,), root: str | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=root or ROOT, capture_output=True, text=True, timeout=60)
    if done.returncode not in ok:
        raise subprocess.SubprocessError(done.stderr.strip() or f"git {args[0]} exited {done.returncode}")
    return done.stdout


def _outside_outputs() -> list[str]:
    return ["--", ".", *(f":(exclude){folder}" for folder in NOT_SOURCE)]


def source_changes(root: str | None = None) -> tuple[list[str], list[str]]:
    """(tracked files changed against HEAD, untracked source files), outside NOT_SOURCE: what makes
    the checkout at `root` (this one by default) other than its commit."""
    tracked = _git("diff", "HEAD", "--name-only", *_outside_outputs(), root=root).split("\n")
    untracked = _git("ls-files", "--others", "--exclude-standard", *_outside_outputs(), root=root).split("\n")
    return [p for p in tracked if p], [p for p in untracked if p.endswith(SOURCE_SUFFIXES)]


def source_diff(root: str | None = None) -> str:
    """The tree's difference from HEAD as one patch: the tracked changes, then each untracked
    source file as a new file, so `git apply` on a checkout of the commit rebuilds the tree."""
    tracked, untracked = source_changes(root)
    parts = [_git("diff", "HEAD", "--binary", *_outside_outputs(), root=root)] if tracked else []
    for path in untracked:  # --no-index exits 1 when the two differ, as a new file always does
        parts.append(_git("diff", "--no-index", "--binary", "--", "/dev/null", path, ok=(0, 1), root=root))
    return "".join(parts)


def uncommitted(path: str) -> bool | None:
    """Whether a file (relative to the checkout) is new, changed, ignored or absent against HEAD;
    None where git cannot tell. A file an experiment reads before it runs must be committed as it is."""
    try:
        changes = _git("status", "--porcelain", "--ignored", "--", path)
        _git("ls-files", "--error-unmatch", "--", path)  # absent from the index: exits 1
    except subprocess.SubprocessError as err:
        return None if "not a git repository" in str(err) else True
    except OSError:
        return None
    return bool(changes.strip())


def git() -> dict[str, str | bool | list | None]:
    """The commit, whether the tree differs from it (`dirty`), and which files do: a dirty run also
    stores SOURCE_DIFF beside its record (store_source_diff)."""
    head = commit()
    try:
        tracked, untracked = source_changes()
    except (OSError, subprocess.SubprocessError):
        return {"commit": head, "dirty": None, "changed": None}
    changed = tracked + untracked
    return {"commit": head, "dirty": bool(changed), "changed": changed, "diff": SOURCE_DIFF if changed else None}


def store_source_diff(run) -> None:
    """Store the tree's diff as the run's SOURCE_DIFF artifact when its host record says dirty (every
    Sacred experiment here calls it first thing): a run from uncommitted code stays reproducible to
    the line. The diff is taken now, a moment after the host record; a failed write fails the run."""
    if not ((run.host_info or {}).get("git") or {}).get("dirty"):
        return
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, SOURCE_DIFF)
        with open(path, "w") as f:
            f.write(source_diff())
        run.add_artifact(path, SOURCE_DIFF)


HOST_INFO = [host_info_gatherer("cpu_count")(os.cpu_count), host_info_gatherer("cpu_model")(cpu_model),
             host_info_gatherer("packages")(packages), host_info_gatherer("thread_env")(thread_env),
             host_info_gatherer("git")(git)]
"""Sacred's additional_host_info for every experiment here: run.json's host.cpu_count, .cpu_model,
.packages, .thread_env and .git."""
