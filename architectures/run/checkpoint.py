"""Checkpoint files: written atomically, read back whole or not at all, and only by their own run.

A checkpoint is a plain dict of tensors, numpy arrays and numbers saved with torch.save. It is
written to `<path>.tmp` and renamed over `<path>`, so a run killed while saving leaves the
previous checkpoint intact, never a half-written one; a save that fails (a full disk) removes
its temp file and stops the run with one line. It records the design and the config that
wrote it: a run resumes only from its own checkpoint, and a file left by a run with another
config is refused with one line naming the first key that differs (a silent resume of someone
else's run would mix two experiments in one result).

One run per checkpoint: `hold_lock` takes an exclusive `fcntl.flock` on `<path>.lock`, before
anything is recorded, and keeps it until the process ends (the kernel releases it on any death,
SIGKILL included); a second run on the same checkpoint stops at once naming the holder's pid.
`check_before_run` makes every check a run would otherwise meet mid-way (a directory, a folder
that cannot be written, an unreadable or foreign file) before the run starts, and never deletes
or changes the file (tests/test_faults.py).
"""

from __future__ import annotations

import fcntl
import io
import os

import torch

from architectures.core.config import ConfigError, DQNConfig
from architectures.core.errors import CheckpointSaveFailed

CHECKPOINT_FORMAT = 3
"""Bumped when the layout changes; a file of another format is refused, not misread (3: every
design's state is its run's parts, none of it in a design's own `extras`)."""
MAY_DIFFER = ("checkpoint_path", "checkpoint_every", "worker_timeout_s", "ray_address")
"""Keys a resumed run may change: where and how often it saves, and how it supervises workers.
Every other key shapes what is learned, so it must match the checkpoint's."""
_HELD: dict[str, int] = {}
"""Absolute checkpoint path -> the descriptor holding its lock, in this process."""
_READ: dict[tuple, dict] = {}
"""(path, size, mtime) -> a checkpoint read by check_before_run, handed once to the run's resume."""


def hold_lock(path: str) -> None:
    """Take the run's lock on `path` for the life of this process (idempotent)."""
    if not path:
        return
    key = os.path.abspath(path)
    if key in _HELD:
        return
    lock_path = f"{key}.lock"
    try:
        os.makedirs(os.path.dirname(key), exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise ConfigError(f"checkpoint_path: cannot create its lock {lock_path!r} ({err.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise ConfigError(f"checkpoint_path: {path!r} is in use by another run (pid {holder}); wait for it to "
                          "end or choose another checkpoint_path") from None
    if not os.path.exists(lock_path) or os.stat(lock_path).st_ino != os.fstat(fd).st_ino:
        os.close(fd)  # its holder finished and unlinked it between our open and our lock: take the new one
        return hold_lock(path)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _HELD[key] = fd


def _not_a_directory(path: str) -> None:
    if os.path.isdir(path):
        raise ConfigError(f"checkpoint_path: {path!r} is a directory; name a file in it, e.g. "
                          f"{os.path.join(path, 'run.pt')!r}")


def check_before_run(design: str, cfg: DQNConfig) -> None:
    """Every checkpoint_path problem, found before any work: one ConfigError line, file kept."""
    path = cfg.checkpoint_path
    if not path:
        return
    _not_a_directory(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, f".write-probe-{os.getpid()}")
        with open(probe, "wb") as f:
            f.write(b"0")
        os.remove(probe)
    except OSError as err:
        raise ConfigError(f"checkpoint_path: cannot write in {folder!r} ({err.strerror}); choose a folder this "
                          "user can write") from None
    hold_lock(path)
    saved = load_checkpoint(path)
    if saved is not None:
        check_owner(saved, design, cfg)
        stat = os.stat(path)
        _READ[(os.path.abspath(path), stat.st_size, stat.st_mtime_ns)] = saved  # read once, not twice


def save_checkpoint(path: str, state: dict) -> None:
    tmp = f"{path}.tmp"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        buffer = io.BytesIO()  # serialised in memory first: a failed write is then a plain OSError
        torch.save(state, buffer)
        with open(tmp, "wb") as f:
            f.write(buffer.getbuffer())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:
        if os.path.exists(tmp):
            os.remove(tmp)  # a partial temp file would keep a full disk full
        raise CheckpointSaveFailed(f"checkpoint_path: saving {path!r} failed ({err.strerror or err}); the "
                                   "previous checkpoint, if any, is kept") from None


def load_checkpoint(path: str) -> dict | None:
    """The saved state, or None when there is no checkpoint yet."""
    if not path or not os.path.exists(path):
        return None
    _not_a_directory(path)
    stat = os.stat(path)
    cached = _READ.pop((os.path.abspath(path), stat.st_size, stat.st_mtime_ns), None)
    if cached is not None:
        return cached
    try:
        # Our own file, holding numpy arrays and RNG states as well as tensors.
        saved = torch.load(path, weights_only=False)
    except Exception as err:  # noqa: BLE001 - any unreadable file is the same one-line error
        raise ConfigError(f"checkpoint_path: {path!r} cannot be read as a checkpoint ({type(err).__name__}: "
                          f"{str(err).splitlines()[0] if str(err) else 'empty'}); it is kept: move it aside or "
                          "choose another checkpoint_path") from None
    if not isinstance(saved, dict) or "format" not in saved:
        raise ConfigError(f"checkpoint_path: {path!r} is not a checkpoint of this suite (a torch file without its "
                          "stamp); it is kept: move it aside or choose another checkpoint_path")
    return saved


def stamp(design: str, cfg: DQNConfig) -> dict:
    """What a checkpoint records of the run that wrote it."""
    return {"format": CHECKPOINT_FORMAT, "design": design, "config": cfg.to_dict()}


def check_owner(saved: dict, design: str, cfg: DQNConfig) -> None:
    """Raise a one-line ConfigError unless `saved` was written by this design and config (a checkpoint
    written before the stamp said `design` says `architecture`)."""
    path = cfg.checkpoint_path
    if saved.get("format") != CHECKPOINT_FORMAT:
        raise ConfigError(f"checkpoint_path: {path!r} has checkpoint format {saved.get('format', 1)}, this suite "
                          f"writes {CHECKPOINT_FORMAT}; move it aside to start the run afresh")
    writer = saved.get("design", saved.get("architecture"))
    if writer != design:
        raise ConfigError(f"checkpoint_path: {path!r} was written by {writer}, not {design}; "
                          f"resume it with design={writer}, or choose another checkpoint_path")
    now, defaults = cfg.to_dict(), DQNConfig().to_dict()
    for key, value in now.items():
        was = saved["config"].get(key, defaults[key])  # a key added since the save ran at its default
        if key not in MAY_DIFFER and was != value:
            raise ConfigError(f"checkpoint_path: {path!r} belongs to a run with {key}={was!r} (this run has "
                              f"{value!r}); resume it with {key}={was!r}, or choose another checkpoint_path")


def remove_checkpoint(path: str) -> None:
    """A finished run's checkpoint goes, and its lock with it: the lock file is unlinked while
    still held, and a run that opened it meanwhile sees it gone and locks a new one (hold_lock)."""
    for name in (path, f"{path}.tmp"):
        if name and os.path.exists(name):
            os.remove(name)
    fd = _HELD.pop(os.path.abspath(path), None) if path else None
    if fd is not None:
        os.remove(f"{os.path.abspath(path)}.lock")
        os.close(fd)
