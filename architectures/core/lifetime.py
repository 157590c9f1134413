"""A child process's lifetime tied to its parent's, for every child the suite starts: a design's
workers (transport/workers.py), a sweep's runs and a cost measurement's co-runners
(experiments/sweeps/runners.py, experiments/components/loops.py). Standard library only: a child
imports it before anything heavy, since a parent killed during those imports would leave it orphaned."""

from __future__ import annotations

import ctypes
import os
import signal


def die_with_parent(parent: int | None = None) -> bool:
    """Linux: have the kernel SIGKILL this process when its parent dies, however it dies
    (PR_SET_PDEATHSIG): a child blocked where it cannot check (a lock its killed parent held) or
    never checking (a sweep's run) goes with it. Elsewhere it does nothing. With `parent`, the pid
    the child was started by, returns False if that parent is already gone (it died before the
    signal was armed), for the caller to end; True otherwise."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    return parent is None or os.getppid() == parent
