"""The suite's one atomic writer, with no dependency beyond the standard library: the run store
(experiments/tracking/store.py), plan's files and the analysis report (analysis/report/framework/common.py) write
through it, so a reader sees the last whole file or the one before, never a part, and a full
disk leaves no 0-byte or cut file behind. It sits in architectures/core, the lowest layer, so
experiments/ and analysis/ share it without importing each other."""

from __future__ import annotations

import os
import tempfile

_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path` whole or not at all (temp file in the same folder, fsync, rename)."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # as open() would have made it, not mkstemp's 0600
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
