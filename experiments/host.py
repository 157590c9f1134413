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
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def git() -> dict[str, str | bool | None]:
    head = commit()
    try:
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                    capture_output=True, text=True, timeout=5).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        head, dirty = None, None
    return {"commit": head, "dirty": dirty}


HOST_INFO = [host_info_gatherer("cpu_count")(os.cpu_count), host_info_gatherer("cpu_model")(cpu_model),
             host_info_gatherer("packages")(packages), host_info_gatherer("thread_env")(thread_env),
             host_info_gatherer("git")(git)]
"""Sacred's additional_host_info for every experiment here: run.json's host.cpu_count, .cpu_model,
.packages, .thread_env and .git."""
