"""Channels between processes, built on shared blocks (transport/shared.py):

- `TransitionRing`: one actor -> learner channel. The actor writes transition records into a
  fixed ring and then publishes its write counter (and its env-step count) under a lock; the
  learner reads the counter under the same lock and copies the published rows into the replay
  in one or two slice copies. The lock is the memory barrier that makes "counter published"
  imply "rows fully written" on any CPU, so the learner never sees a torn transition
  (tests/test_actor_learner.py proves it with self-checking rows from several processes).
- `WeightChannel`: learner -> actors. The online network's parameters and a version number,
  copied under a lock; actors peek at the version without the lock and copy only when it moved.
- `SharedReplay`: one replay ring that several processes write to and sample from (hogwild's
  `hogwild_replay=shared`): slots reserved under a lock, rows guarded by per-slot sequence
  numbers so a sample never holds a half-written row (see its docstring).
"""

from __future__ import annotations

import os
import platform

import numpy as np

from architectures.core.networks import FlatLayout
from architectures.transport.shared import SharedBlocks


class TransitionRing:
    """Single-producer single-consumer ring of transition records (see module docstring).

    Arrays: records (capacity,), priorities (capacity,) float32, counters (2, 8) int64 with
    [0, 0] = rows published by the writer and [1, 0] = rows consumed by the reader.
    """

    def __init__(self, records: np.ndarray, priorities: np.ndarray, counters: np.ndarray, lock,
                 status_row: np.ndarray | None = None):
        self.records, self.priorities, self.counters, self.lock = records, priorities, counters, lock
        self.capacity = len(records)
        self.status_row = status_row  # the writer's status record (env_steps published with the rows)
        self.written = int(counters[0, 0])  # writer side: rows written (published or not)
        self._read_seen = int(counters[1, 0])  # writer side: last consumer position seen
        self.read = int(counters[1, 0])  # reader side
        self.env_steps_seen = 0  # reader side: the writer's env steps as of the last drain

    @staticmethod
    def allocate(blocks: SharedBlocks, name: str, capacity: int, dtype: np.dtype) -> dict[str, np.ndarray]:
        return {"records": blocks.allocate(f"{name}_records", (capacity,), dtype),
                "priorities": blocks.allocate(f"{name}_priorities", (capacity,), np.float32),
                "counters": blocks.allocate(f"{name}_counters", (2, 8), np.int64)}

    # ------------------------------------------------------------------ writer (actor)
    def has_room(self) -> bool:
        if self.written - self._read_seen < self.capacity:
            return True
        with self.lock:
            self._read_seen = int(self.counters[1, 0])
        return self.written - self._read_seen < self.capacity

    def write(self, transition: tuple, priority: float = 0.0) -> None:
        """Write one row (call has_room() first); invisible to the reader until publish()."""
        slot = self.written % self.capacity
        self.records[slot] = transition
        self.priorities[slot] = priority
        self.written += 1

    def publish(self, env_steps: int) -> None:
        with self.lock:
            self.counters[0, 0] = self.written
            self.status_row["env_steps"] = env_steps

    # ------------------------------------------------------------------ reader (learner)
    def drain(self, into) -> int:
        """Move every published row into `into(rows, priorities)`; returns the row count."""
        with self.lock:
            written = int(self.counters[0, 0])
            self.env_steps_seen = int(self.status_row["env_steps"])
        n = written - self.read
        if n:
            start = self.read % self.capacity
            end = start + n
            if end <= self.capacity:
                into(self.records[start:end], self.priorities[start:end])
            else:
                into(self.records[start:], self.priorities[start:])
                into(self.records[:end - self.capacity], self.priorities[:end - self.capacity])
            self.read = written
            with self.lock:
                self.counters[1, 0] = written
        return n


class WeightChannel:
    """Learner -> actors parameter broadcast with a version number (see module docstring)."""

    def __init__(self, flat: np.ndarray, header: np.ndarray, lock, shapes: list[tuple]):
        self.flat, self.header, self.lock = flat, header, lock  # flat (P,) float32; header (8,) int64
        self.views = FlatLayout(shapes).views(flat)

    @staticmethod
    def allocate(blocks: SharedBlocks, shapes: list[tuple]) -> dict[str, np.ndarray]:
        header = blocks.allocate("weights_header", (8,), np.int64)
        header[0] = -1  # nothing published yet
        return {"weights": blocks.allocate("weights", (FlatLayout(shapes).size,), np.float32),
                "weights_header": header}

    def publish(self, params: list[np.ndarray], version: int, block: bool = True) -> bool:
        """Copy `params` in as `version`; with block=False, only if no actor is copying them out
        right now (returns whether it published): with many actors on few cores, one preempted
        mid-fetch would hold the learner at its lock for a time slice."""
        if not self.lock.acquire(block):
            return False
        try:
            for view, p in zip(self.views, params):
                np.copyto(view, p)
            self.header[0] = version
        finally:
            self.lock.release()
        return True

    def latest_version(self) -> int:
        return int(self.header[0])  # an unlocked peek: at worst one step late

    def fetch(self, params: list[np.ndarray], have_version: int) -> int | None:
        """Copy the published parameters into `params` if newer than `have_version`; returns
        the version now held, or None when nothing new was published."""
        if int(self.header[0]) == have_version:
            return None
        with self.lock:
            for p, view in zip(params, self.views):
                np.copyto(p, view)
            return int(self.header[0])


class SharedReplay:
    """A replay ring in shared memory that every worker writes to and samples from, lock-free on
    the read side (uniform sampling; the same `add`/`sample`/`size` as replay.ReplayBuffer).

    Arrays (from `allocate`, so they are SharedBlocks segments, unlinked like every other one):
    `data` (C,) transition records, `seq` (C,) int64 per-slot sequence numbers, `counters` (8,)
    int64 with [0] = tickets handed out (rows ever reserved). cursor = tickets % C and
    size = min(C, tickets) both derive from that one counter, so they cannot disagree.

    Writer, for each row:
    1. under the lock, take ticket t = counters[0] and bump it: the one read-modify-write that
       several writers share (without the lock two writers could take the same slot t % C);
    2. wait until seq[slot] == 2 (t - C) + 2 (0 when t < C): the writer of the slot's previous
       ticket has finished. Normally true at once; it matters only if a writer stalled inside a
       row for a whole lap of the ring, and it guarantees writes to one slot never overlap and
       land in ticket order;
    3. seq[slot] = 2t + 1 (odd: being written), write the row, seq[slot] = 2t + 2 (even: whole).
    Reader (a seqlock read, no lock): draw slots in [0, size), read their seqs, gather the rows,
    read the seqs again, and keep a row only if both reads are equal, even and non-zero (zero:
    reserved but never written); redraw the others until the batch is whole. A reader that saw
    any byte of a write saw that write's odd seq or a later one on its second read, and a slot's
    seq only grows (no ABA), so no torn row passes. Why not one lock around everything: a
    128-row gather would then block every writer's env loop, and vice versa; here writers hold
    the lock for two integer ops and readers never take it. What it costs against the local
    ReplayBuffer: docs/design-notes.md#sharedreplay.

    The argument needs stores to become visible in program order and loads not to overtake
    older loads, which x86-64 guarantees (TSO); each numpy call is an opaque C call, so neither
    Python nor the C compiler moves the seq accesses across the row copy. On weakly ordered
    CPUs (ARM, POWER) that does not hold, so there `locked=True` (the default off x86) does the
    row write and the gather inside the lock instead: slower, plainly correct.
    """

    def __init__(self, data: np.ndarray, seq: np.ndarray, counters: np.ndarray, lock,
                 locked: bool | None = None):
        self.data, self.seq, self.counters, self.lock = data, seq, counters, lock
        self.capacity = len(data)
        self.dtype = data.dtype
        self.locked = platform.machine().lower() not in ("x86_64", "amd64") if locked is None else locked
        self.resampled = 0  # this process: rows redrawn because they were mid-write (or never written)
        self.write_waits = 0  # this process: rows whose slot's previous writer was still inside it

    @staticmethod
    def allocate(blocks: SharedBlocks, name: str, capacity: int, dtype: np.dtype) -> dict[str, np.ndarray]:
        return {"data": blocks.allocate(f"{name}_data", (capacity,), dtype),
                "seq": blocks.allocate(f"{name}_seq", (capacity,), np.int64),
                "counters": blocks.allocate(f"{name}_counters", (8,), np.int64)}

    @property
    def added(self) -> int:
        return int(self.counters[0])

    @property
    def size(self) -> int:
        return min(self.capacity, int(self.counters[0]))

    def add(self, t) -> None:
        if self.locked:
            with self.lock:
                ticket = int(self.counters[0])
                self.counters[0] = ticket + 1
                self._write(ticket, t)
            return
        with self.lock:
            ticket = int(self.counters[0])
            self.counters[0] = ticket + 1
        slot, previous = ticket % self.capacity, ticket - self.capacity
        done_before = 2 * previous + 2 if previous >= 0 else 0
        if int(self.seq[slot]) != done_before:
            self.write_waits += 1
            while int(self.seq[slot]) != done_before:  # (a writer killed mid-row fails the run anyway)
                os.sched_yield()
        self._write(ticket, t)

    def state_dict(self) -> dict:
        """The rows, their sequence numbers and the ticket counter; only consistent while no worker
        writes (hogwild saves it with every worker stopped)."""
        size = self.size
        return {"data": self.data[:size].copy(), "seq": self.seq[:size].copy(), "counters": self.counters.copy()}

    def load_state_dict(self, state: dict) -> None:
        size = len(state["data"])
        self.data[:size], self.seq[:size] = state["data"], state["seq"]
        self.counters[:] = state["counters"]

    def _write(self, ticket: int, t) -> None:
        slot = ticket % self.capacity
        self.seq[slot] = 2 * ticket + 1
        self.data[slot] = t
        self.seq[slot] = 2 * ticket + 2

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Uniform slots with replacement, every row whole; field views of one fresh copy, as
        ReplayBuffer.sample returns them."""
        size = self.size
        if size == 0:
            raise RuntimeError("cannot sample from an empty replay buffer")
        indices = rng.integers(0, size, batch_size)                 # (B,)
        before, rows, after = self._read(indices)                    # (B,) seqs, (B,) records, (B,) seqs
        redraw = np.flatnonzero((before != after) | (before & 1) | (before == 0))
        while len(redraw):  # rare: rows a writer was inside (or never wrote); redraw just those
            self.resampled += len(redraw)
            indices[redraw] = rng.integers(0, size, len(redraw))
            before, again, after = self._read(indices[redraw])
            whole = (before == after) & (before & 1 == 0) & (before != 0)
            rows[redraw[whole]] = again[whole]
            redraw = redraw[~whole]
        return {name: rows[name] for name in self.dtype.names}

    def _read(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(seqs before, rows, seqs after) of `indices`, in that order (the seqlock read)."""
        if self.locked:
            with self.lock:
                before = self.seq[indices]
                return before, self.data[indices], before
        before = self.seq[indices]
        rows = self.data[indices]
        return before, rows, self.seq[indices]
