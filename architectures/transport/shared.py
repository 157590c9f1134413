"""Shared-memory plumbing for multi-process designs: no pickled message per step.

The channels built on these blocks (TransitionRing, WeightChannel, SharedReplay) are in
transport/channels.py.

- `SharedBlocks`: named numpy arrays in POSIX shared memory (/dev/shm/pdqn_<pid>_<tag>_<name>),
  created and unlinked by the main process. close() runs from a finally block, so a normal
  end, an exception or Ctrl-C leaves nothing behind; if the main process is SIGKILLed, the
  multiprocessing resource tracker (its own process, shared with spawned children) unlinks
  what is left.
- `STATUS_DTYPE`, `Control`: per-worker counters and run-wide flags the learner reads for its
  diagnostics and failure checks.
- `check_shared_memory`: what a run will map, against what /dev/shm has free, before any block
  or worker exists. tmpfs only reserves a page when it is first written, so a run that does not
  fit (Docker gives containers 64 MB) would otherwise die of SIGBUS mid-run, leaking its
  segments and semaphores; each block is also fallocate'd on creation, so even space taken by
  someone else after the check is a clean error, never a bus error.
"""

from __future__ import annotations

import errno
import mmap
import os
import secrets
import sys
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

from architectures.core.config import ConfigError
from architectures.transport import reaper

SHM_PREFIX = "pdqn"
SHM_DIR = "/dev/shm"
"""Where POSIX shared memory (our blocks, torch's shared tensors, semaphores) lives on Linux."""
LOCK_BYTES = mmap.PAGESIZE
"""A multiprocessing Lock is a POSIX named semaphore: one page-sized file in /dev/shm."""
WAYS_OUT = ("lower buffer_size, use fewer workers (num_workers), or give the container more shared memory "
            "(docker run --shm-size=2g)")

# Per-worker counters, written only by that worker. Padded to whole 64-byte cache lines so
# two workers never write to the same line.
STATUS_DTYPE = np.dtype([
    ("env_steps", np.int64), ("transitions", np.int64), ("episodes", np.int64),
    ("episode_length_sum", np.int64), ("episode_return_sum", np.float64),
    ("weights_version", np.int64), ("weight_fetches", np.int64), ("at_sync_point", np.int64), ("state", np.int64),
    ("t_env_step", np.float64), ("t_act", np.float64), ("t_n_step", np.float64), ("t_handoff", np.float64),
    ("t_wait", np.float64), ("t_weight_sync", np.float64), ("pid", np.int64), ("heartbeat", np.int64),
    # hogwild workers: their updates, how many overlapped another worker's write, the updates
    # other workers applied while this one computed its gradient, loss sum, learner time
    ("updates", np.int64), ("overlaps", np.int64), ("version_gap_sum", np.int64), ("loss_sum", np.float64),
    ("t_sample", np.float64), ("t_gradient", np.float64), ("t_apply", np.float64), ("adam_steps", np.float64),
    # SharedReplay users: rows a reader redrew (a writer was inside), waits for a slot's last writer
    ("replay_resampled", np.int64), ("replay_write_waits", np.int64),
    # hogwild workers' latest batch, for the live curves: Q(s, a) mean and max, the gradient norm
    # before clipping, and the size of the worker's replay
    ("q_mean", np.float64), ("q_max", np.float64), ("grad_norm", np.float64), ("replay_size", np.int64),
    # set while the worker is blocked on its notifier (notifier.Notifier), cleared by whoever notifies it
    ("waiting", np.int64),
], align=True)
STATUS_DTYPE = np.dtype({"names": STATUS_DTYPE.names, "formats": [STATUS_DTYPE.fields[n][0] for n in STATUS_DTYPE.names],
                         "offsets": [STATUS_DTYPE.fields[n][1] for n in STATUS_DTYPE.names],
                         "itemsize": -(-STATUS_DTYPE.itemsize // 64) * 64})
STARTING, READY, RUNNING, DONE, FAILED = range(5)  # values of status["state"]


class _Segment(shared_memory.SharedMemory):
    """A SharedMemory whose close never pulls the mapping from under live numpy views.

    Arrays are built with np.frombuffer, which holds a buffer export: while any view lives,
    close() cannot unmap (BufferError), so we only close the descriptor and let the mapping go
    with the last view. (np.ndarray(buffer=...) holds no export, and an unmap under it crashes.)
    """

    def close(self) -> None:
        try:
            super().close()
        except BufferError:
            if getattr(self, "_fd", -1) >= 0:
                os.close(self._fd)
                self._fd = -1


def block_bytes(shape: tuple, dtype) -> int:
    """Bytes a block of this shape takes in /dev/shm: whole pages, as tmpfs allocates them."""
    nbytes = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
    return -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE


def shm_free_bytes(path: str = SHM_DIR) -> int | None:
    """Free bytes in `path`, or None where there is no such filesystem (not Linux)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _mb(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.1f} MB" if nbytes >= 2**20 / 10 else f"{nbytes / 2**10:,.0f} KB"


def reap_orphans() -> list[str]:
    """Unlink our segments whose owner process is gone; return their names.

    The reaper covers a killed run, but not a machine whose every process was killed at once (a
    container or login session torn down): then the next run finds the dead run's blocks still
    taking /dev/shm. A name carries its owner's pid; a live pid (even a reused one) is left alone.
    Not for runs in other pid namespaces that share this /dev/shm (docker --ipc=host): their pids
    look dead from here, so `PDQN_KEEP_ORPHANS=1` turns the reaping off."""
    if os.environ.get("PDQN_KEEP_ORPHANS") == "1":
        return []
    reaped = []
    for name in leaked_segments():
        try:
            pid = int(name.split("_")[1])
        except (IndexError, ValueError):
            continue
        try:
            os.kill(pid, 0)
            continue  # alive (or not ours to signal): not an orphan
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            os.unlink(os.path.join(SHM_DIR, name))
            reaped.append(name)
        except FileNotFoundError:  # another run reaped it first
            pass
    return reaped


def check_shared_memory(needs: dict[str, int], what: str) -> None:
    """Raise a one-line ConfigError if `needs` (part -> bytes) does not fit in /dev/shm's free space
    (after reaping dead runs' blocks, which would otherwise count as taken)."""
    reaped = reap_orphans()
    if reaped:
        owners = sorted({name.split("_")[1] for name in reaped})
        print(f"note: unlinked {len(reaped)} shared-memory blocks in {SHM_DIR} left by dead runs (pid "
              f"{', '.join(owners)}); PDQN_KEEP_ORPHANS=1 keeps them", file=sys.stderr)
    free = shm_free_bytes()
    total = sum(needs.values())
    if free is None or total <= free:
        return
    parts = ", ".join(f"{name} {_mb(n)}" for name, n in sorted(needs.items(), key=lambda kv: -kv[1]) if n)
    raise ConfigError(f"shared memory: {what} needs {_mb(total)} in {SHM_DIR} ({parts}) but only {_mb(free)} "
                      f"is free; {WAYS_OUT}")


def _view(shm: shared_memory.SharedMemory, shape: tuple, dtype: np.dtype) -> np.ndarray:
    return np.frombuffer(shm.buf, dtype=dtype, count=int(np.prod(shape))).reshape(shape)


@dataclass(frozen=True)
class BlockSpec:
    shm_name: str
    shape: tuple
    dtype: np.dtype


class SharedBlocks:
    """Owner of one run's shared arrays. `allocate` matches `replay.Allocator`."""

    def __init__(self) -> None:
        reaper.install()  # a group kill must not leave these blocks behind (architectures/transport/reaper.py)
        self.tag = f"{SHM_PREFIX}_{os.getpid()}_{secrets.token_hex(3)}"
        self.specs: dict[str, BlockSpec] = {}
        self._segments: list[shared_memory.SharedMemory] = []
        self.nbytes = 0  # page-rounded bytes allocated so far (what check_shared_memory predicts)

    def allocate(self, name: str, shape: tuple, dtype: np.dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        nbytes = max(1, int(np.prod(shape)) * dtype.itemsize)
        shm = _Segment(name=f"{self.tag}_{name}", create=True, size=nbytes)
        self._segments.append(shm)
        fd = getattr(shm, "_fd", -1)
        if fd >= 0 and hasattr(os, "posix_fallocate"):
            try:  # reserve the pages now: a full /dev/shm is this error, not a SIGBUS at first write
                os.posix_fallocate(fd, 0, nbytes)
            except OSError as err:
                if err.errno != errno.ENOSPC:
                    raise
                free = shm_free_bytes()
                raise ConfigError(f"shared memory: block {name!r} needs {_mb(nbytes)} in {SHM_DIR} but only "
                                  f"{_mb(free or 0)} is free; {WAYS_OUT}") from None
        self.nbytes += block_bytes(shape, dtype)
        self.specs[name] = BlockSpec(shm.name, tuple(shape), dtype)
        array = _view(shm, shape, dtype)
        array[...] = np.zeros((), dtype)  # fresh segments are zeroed by the kernel; be explicit
        return array

    def close(self) -> None:
        """Unlink every segment (idempotent). Mappings held by live numpy views stay valid until
        those views die; the names are gone from /dev/shm at once."""
        while self._segments:
            shm = self._segments.pop()
            try:
                shm.unlink()
            except FileNotFoundError:
                pass
            shm.close()  # the mapping itself lives on while numpy views need it


def attach(specs: dict[str, BlockSpec]) -> tuple[dict[str, np.ndarray], list[shared_memory.SharedMemory]]:
    """In a worker: map the owner's blocks. Keep the returned segments alive as long as the arrays."""
    arrays, segments = {}, []
    for name, spec in specs.items():
        shm = _Segment(name=spec.shm_name)
        segments.append(shm)
        arrays[name] = _view(shm, spec.shape, spec.dtype)
    return arrays, segments


def leaked_segments(pid: int | None = None) -> list[str]:
    """Names of this suite's segments in /dev/shm (for one owner pid, or all)."""
    prefix = f"{SHM_PREFIX}_{pid}_" if pid is not None else f"{SHM_PREFIX}_"
    try:
        return sorted(n for n in os.listdir("/dev/shm") if n.startswith(prefix))
    except FileNotFoundError:  # not Linux
        return []


class Control:
    """Run-wide int64 flags, each on its own cache line: written by the learner, read by actors."""

    GO, STOP, LEARNER_VERSION, RELEASED, CLAIMED, MAIN_WAITING = range(6)
    """RELEASED: sync points the workers may leave; CLAIMED: env steps free-running actors
    have claimed so far (actor_quotas=free); MAIN_WAITING: the main process is blocked on its
    notifier (notifier.Notifier; each worker's own flag is its status row's `waiting`)."""
    SHAPE = (6, 8)  # int64; column 0 used, one cache line per flag

    def __init__(self, array: np.ndarray):
        self.array = array

    @staticmethod
    def allocate(blocks: SharedBlocks) -> "Control":
        return Control(blocks.allocate("control", Control.SHAPE, np.int64))

    def __getitem__(self, key: int) -> int:
        return int(self.array[key, 0])

    def __setitem__(self, key: int, value: int) -> None:
        self.array[key, 0] = value
