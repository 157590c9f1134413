"""Shared-memory plumbing: no torn transition, no torn weights, nothing left in /dev/shm.

The stress tests run real writer processes (spawn) at full speed against a learner that drains
and samples at the same time, with rings small enough to wrap around thousands of times.
"""

import multiprocessing as mp
import os

import numpy as np
import pytest

from architectures.replay import ReplayBuffer, Transition, transition_dtype
from architectures.shared import (STATUS_DTYPE, SharedBlocks, TransitionRing, WeightChannel, attach,
                                  leaked_segments)

OBS_SHAPE = (4,)
RECORD = transition_dtype(OBS_SHAPE, np.dtype(np.float32))


def self_checking(worker: int, k: int) -> Transition:
    """Every field of transition k of `worker` is derived from (worker, k): a torn row cannot pass."""
    base = float(worker * 1_000_000 + k)
    obs = np.full(OBS_SHAPE, base, dtype=np.float32)
    return Transition(obs, obs + 0.5, k % 7, base, float(worker), worker, k)


def row_is_whole(row) -> bool:
    worker, k = int(row["source"]), int(row["version"])
    base = np.float32(worker * 1_000_000 + k)
    return bool((row["obs"] == base).all() and (row["next_obs"] == base + np.float32(0.5)).all()
                and row["action"] == k % 7 and row["reward"] == base and row["discount"] == worker)


def _writer(index: int, specs, lock, count: int) -> None:
    arrays, segments = attach(specs)
    status = arrays["status"]
    ring = TransitionRing(arrays[f"r{index}_records"], arrays[f"r{index}_priorities"], arrays[f"r{index}_counters"],
                          lock, status[index])
    for k in range(count):
        while not ring.has_room():
            pass
        ring.write(self_checking(index, k), priority=float(k))
        ring.publish(k + 1)
    del ring, status, arrays


def test_rings_never_deliver_or_sample_a_torn_transition():
    writers, count, capacity = 3, 30_000, 64  # the rings wrap ~470 times each
    ctx = mp.get_context("spawn")
    blocks = SharedBlocks()
    try:
        status = blocks.allocate("status", (writers,), STATUS_DTYPE)
        ring_arrays = [TransitionRing.allocate(blocks, f"r{i}", capacity, RECORD) for i in range(writers)]
        locks = [ctx.Lock() for _ in range(writers)]
        rings = [TransitionRing(**ring_arrays[i], lock=locks[i], status_row=status[i]) for i in range(writers)]
        replay = ReplayBuffer(512, OBS_SHAPE, np.float32)
        rng = np.random.default_rng(0)
        next_k = [0] * writers
        torn, sampled_rows = [], 0

        def sink(rows, priorities):
            for row, priority in zip(rows, priorities):
                worker = int(row["source"])
                # In order, no gap, no duplicate, whole, and its priority travelled with it.
                assert int(row["version"]) == next_k[worker] and row_is_whole(row) and priority == row["version"]
                next_k[worker] += 1
            replay.extend(rows)

        procs = [ctx.Process(target=_writer, args=(i, blocks.specs, locks[i], count)) for i in range(writers)]
        for p in procs:
            p.start()
        while any(p.is_alive() for p in procs) or any(r.drain(sink) for r in rings):
            for ring in rings:
                ring.drain(sink)
            if replay.size:
                batch = replay.sample(64, rng)
                sampled_rows += 64
                torn += [i for i in range(64) if not row_is_whole({k: v[i] for k, v in batch.items()})]
        for p in procs:
            p.join()
            assert p.exitcode == 0
        for ring in rings:
            ring.drain(sink)
        assert next_k == [count] * writers  # every transition arrived exactly once
        assert [ring.env_steps_seen for ring in rings] == [count] * writers
        assert sampled_rows > 1000 and torn == []
    finally:
        blocks.close()
    assert not leaked_segments(os.getpid())


def _weight_reader(specs, lock, shapes, rounds: int, out) -> None:
    arrays, segments = attach(specs)
    channel = WeightChannel(arrays["weights"], arrays["weights_header"], lock, shapes)
    params = [np.zeros(s, np.float32) for s in shapes]
    version, seen, torn = -1, 0, 0
    while seen < rounds:
        new = channel.fetch(params, version)
        if new is None:
            continue
        version, seen = new, seen + 1
        # The learner fills every parameter with its version number: a mixed set is torn.
        torn += int(any((p != new).any() for p in params))
    out.put((seen, torn, version))


def test_weight_channel_never_hands_out_a_mixed_set_of_parameters():
    shapes = [(64, 4), (64,), (64, 64), (64,), (2, 64), (2,)]
    ctx = mp.get_context("spawn")
    blocks = SharedBlocks()
    try:
        arrays = WeightChannel.allocate(blocks, shapes)
        lock = ctx.Lock()
        channel = WeightChannel(arrays["weights"], arrays["weights_header"], lock, shapes)
        out = ctx.SimpleQueue()
        reader = ctx.Process(target=_weight_reader, args=(blocks.specs, lock, shapes, 200, out))
        reader.start()
        version = 0
        while reader.is_alive() and out.empty():
            version += 1
            channel.publish([np.full(s, version, np.float32) for s in shapes], version)
        seen, torn, last = out.get()
        reader.join()
        assert seen == 200 and torn == 0 and 0 < last <= version
    finally:
        blocks.close()


def test_shared_blocks_unlink_everything_on_close():
    blocks = SharedBlocks()
    a = blocks.allocate("a", (10,), np.float64)
    blocks.allocate("b", (3, 8), np.int64)
    a[:] = 1.0  # a live view does not stop the unlink
    assert len(leaked_segments(os.getpid())) == 2
    blocks.close()
    blocks.close()  # idempotent
    assert not leaked_segments(os.getpid())
    assert a.sum() == 10.0  # the mapping outlives the name


@pytest.mark.parametrize("n", [0, 1, 5, 12, 40])
def test_replay_extend_equals_repeated_add(n):
    one, many = ReplayBuffer(12, OBS_SHAPE, np.float32), ReplayBuffer(12, OBS_SHAPE, np.float32)
    for k in range(7):  # start mid-ring so the block wraps
        one.add(self_checking(0, k))
        many.add(self_checking(0, k))
    rows = np.zeros(n, RECORD)
    for k in range(n):
        rows[k] = self_checking(1, k)
        one.add(self_checking(1, k))
    many.extend(rows)
    assert (one.cursor, one.size, one.added) == (many.cursor, many.size, many.added)
    assert one.data.tobytes() == many.data.tobytes()
