"""Shared-memory plumbing: no torn transition, no torn weights, nothing left in /dev/shm.

The stress tests run real writer processes (spawn) at full speed against a learner that drains
and samples at the same time, with rings small enough to wrap around thousands of times.
"""

import multiprocessing as mp
import os
import threading

import numpy as np
import pytest

from architectures.core.diagnostics import shares
from architectures.core.replay import ReplayBuffer, Transition, transition_dtype
from architectures.transport.channels import SharedReplay, TransitionRing, WeightChannel
from architectures.transport.shared import STATUS_DTYPE, SharedBlocks, attach, leaked_segments

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


@pytest.mark.slow
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

        def into(rows, priorities):
            for row, priority in zip(rows, priorities):
                worker = int(row["source"])
                # In order, no gap, no duplicate, whole, and its priority travelled with it.
                assert int(row["version"]) == next_k[worker] and row_is_whole(row) and priority == row["version"]
                next_k[worker] += 1
            replay.extend(rows)

        procs = [ctx.Process(target=_writer, args=(i, blocks.specs, locks[i], count)) for i in range(writers)]
        for p in procs:
            p.start()
        while any(p.is_alive() for p in procs) or any(r.drain(into) for r in rings):
            for ring in rings:
                ring.drain(into)
            if replay.size:
                batch = replay.sample(64, rng)
                sampled_rows += 64
                torn += [i for i in range(64) if not row_is_whole({k: v[i] for k, v in batch.items()})]
        for p in procs:
            p.join()
            assert p.exitcode == 0
        for ring in rings:
            ring.drain(into)
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


# ------------------------------------------------------------------ SharedReplay: many writers, lock-free readers
def _replay_writer(index: int, specs, lock, locked: bool, barrier, laps: int, last: int) -> None:
    """Write `laps` rows, wait until every writer has, then write `last` more (the final contents)."""
    arrays, segments = attach(specs)
    replay = SharedReplay(arrays["rp_data"], arrays["rp_seq"], arrays["rp_counters"], lock, locked=locked)
    for k in range(laps):
        replay.add(self_checking(index, k))
    barrier.wait()
    for k in range(laps, laps + last):
        replay.add(self_checking(index, k))
    del replay, arrays


@pytest.mark.parametrize("locked, last", [
    (False, [8, 16, 40]),  # the seqlock (x86), three writers, unequal final shares
    (True, [32, 32]),      # the locked fallback (weakly ordered CPUs), two writers
])
def test_shared_replay_never_samples_a_torn_row_and_keeps_the_newest_rows(locked, last):
    writers, capacity, laps = len(last), sum(last), 20_000  # the ring wraps ~300 times per writer
    ctx = mp.get_context("spawn")
    blocks = SharedBlocks()
    try:
        lock, barrier = ctx.Lock(), ctx.Barrier(writers)
        replay = SharedReplay(**SharedReplay.allocate(blocks, "rp", capacity, RECORD), lock=lock, locked=locked)
        procs = [ctx.Process(target=_replay_writer, args=(i, blocks.specs, lock, locked, barrier, laps, last[i]))
                 for i in range(writers)]
        for p in procs:
            p.start()
        rng = np.random.default_rng(0)
        torn, sampled_while_writing = [], 0
        while any(p.is_alive() for p in procs):  # sample as fast as possible while they write
            if replay.size == 0:
                continue
            batch = replay.sample(64, rng)
            sampled_while_writing += 64 * (replay.added < writers * laps)
            torn += [i for i in range(64) if not row_is_whole({k: v[i] for k, v in batch.items()})]
        for p in procs:
            p.join()
            assert p.exitcode == 0
        assert torn == [] and sampled_while_writing > 1000

        # Counters: every row reserved exactly once; the ring holds exactly the newest `capacity`
        # tickets, each in its own slot, all finished (even seq).
        total = writers * laps + capacity
        assert (replay.added, replay.size) == (total, capacity)
        tickets = replay.seq // 2 - 1
        assert (replay.seq % 2 == 0).all() and sorted(tickets) == list(range(total - capacity, total))
        assert (tickets % capacity == np.arange(capacity)).all()
        # Every writer's last rows are all there (they are the newest tickets), in proportion,
        # each writer's rows in ticket order are in its write order, and every row is whole.
        order = np.argsort(tickets)
        for i in range(writers):
            mine = replay.data["version"][order][replay.data["source"][order] == i]
            assert mine.tolist() == list(range(laps, laps + last[i]))
        assert shares(replay.data["source"], writers) == [n / capacity for n in last]
        assert all(row_is_whole(row) for row in replay.data)
        batch = replay.sample(capacity, rng)
        assert all(row_is_whole({k: v[i] for k, v in batch.items()}) for i in range(capacity))
    finally:
        blocks.close()
    assert not leaked_segments(os.getpid())


class _StrikeDuringCopy:
    """Stands in for the data array: on the first gather, a writer rewrites `slot` while the rows
    are being copied (the copy holds half of the old row, half of the new), as a real one can."""

    def __init__(self, data: np.ndarray, seq: np.ndarray, slot: int, new_row):
        self.data, self.seq, self.slot, self.new_row, self.struck = data, seq, slot, new_row, False
        self.dtype = data.dtype

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, indices):
        if self.struck:
            return self.data[indices]
        self.struck = True
        old = int(self.seq[self.slot])
        self.seq[self.slot] = old + 1  # the writer starts ...
        self.data[self.slot]["obs"] = self.new_row[0]  # ... half the row is new when the copy happens
        rows = self.data[indices]
        self.data[self.slot] = self.new_row  # ... and finishes
        self.seq[self.slot] = old + 2
        return rows


def _garble_slot_mid_write(replay):  # a writer stalled inside slot 2: odd seq, half a row
    replay.seq[2] += 1
    replay.data["obs"][2] = -1.0


def _reserve_unwritten_slot(replay):  # slot 4 reserved (size 5) but its writer has not started
    replay.counters[0] += 1


def _rewrite_slot_during_copy(replay):  # a writer rewrites slot 2 between the two seq reads
    replay.data = _StrikeDuringCopy(replay.data, replay.seq, 2, self_checking(1, 99))


@pytest.mark.parametrize("interfere, never_returned", [
    (None, []),
    (_garble_slot_mid_write, [(1, 2)]),
    (_reserve_unwritten_slot, [(0, 0)]),  # the never-written row: zeros
    (_rewrite_slot_during_copy, [(1, 2)]),  # the old row is gone; the copy of it was torn
])
def test_shared_replay_reader_redraws_rows_a_writer_is_inside(interfere, never_returned):
    blocks = SharedBlocks()
    try:
        replay = SharedReplay(**SharedReplay.allocate(blocks, "rp", 8, RECORD), lock=threading.Lock(), locked=False)
        for k in range(4):
            replay.add(self_checking(1, k))
        if interfere is not None:
            interfere(replay)
        batch = replay.sample(2_000, np.random.default_rng(1))
        rows = list(zip(batch["source"].tolist(), batch["version"].tolist()))
        assert all(row_is_whole({k: v[i] for k, v in batch.items()}) for i in range(len(rows)))
        assert not set(never_returned) & set(rows)
        assert (replay.resampled > 0) == (interfere is not None)
    finally:
        blocks.close()
    assert not leaked_segments(os.getpid())


def test_a_writer_that_laps_a_stalled_writer_waits_for_it():
    blocks = SharedBlocks()
    try:
        replay = SharedReplay(**SharedReplay.allocate(blocks, "rp", 4, RECORD), lock=threading.Lock(), locked=False)
        for k in range(5):  # tickets 0-4; ticket 4 reused slot 0
            replay.add(self_checking(0, k))
        replay.seq[1] = 3  # pretend ticket 1's writer is still inside slot 1
        lapping = threading.Thread(target=replay.add, args=(self_checking(1, 0),))  # ticket 5 -> slot 1
        lapping.start()
        lapping.join(0.3)
        assert lapping.is_alive() and replay.seq[1] == 3 and replay.data["source"][1] == 0  # it has not begun
        replay.seq[1] = 4  # ticket 1's writer finishes
        lapping.join(10)
        assert not lapping.is_alive() and replay.write_waits == 1
        assert replay.seq[1] == 2 * 5 + 2 and row_is_whole(replay.data[1]) and replay.data["source"][1] == 1
    finally:
        blocks.close()
    assert not leaked_segments(os.getpid())


def _waits_for_go(index: int, specs, semaphores, ready, out) -> None:
    """Block on the notifier until the control's GO flag is set; report the CPU the wait took."""
    import time

    from architectures.transport.notifier import Notifier
    from architectures.transport.shared import Control

    arrays, segments = attach(specs)
    control = Control(arrays["control"])
    notifier = Notifier(semaphores, arrays["status"]["waiting"])
    ready.release()
    cpu = time.process_time()
    waited = notifier.wait_until(index, lambda: control[Control.GO] == 1)
    out.put((time.process_time() - cpu, waited, time.perf_counter()))
    del control, notifier, arrays


@pytest.mark.alone
def test_a_notifier_wakes_a_blocked_waiter_without_polling():
    """notifier.Notifier: a waiter blocks without CPU (polling in 0.2 ms sleeps took the learner's core
    once 16 actors waited) and wakes within milliseconds of a notify, not at its beat;
    notify() posts only the waiters that wait, and clears their flags."""
    import time

    from architectures.transport.notifier import BEAT_S, Notifier
    from architectures.transport.shared import Control

    ctx = mp.get_context("spawn")
    blocks = SharedBlocks()
    try:
        control = Control.allocate(blocks)
        status = blocks.allocate("status", (4,), STATUS_DTYPE)
        semaphores, ready, out = [ctx.Semaphore(0) for _ in range(4)], ctx.Semaphore(0), ctx.SimpleQueue()
        notifier = Notifier(semaphores, status["waiting"])
        waiters = [ctx.Process(target=_waits_for_go, args=(i, blocks.specs, semaphores, ready, out)) for i in range(4)]
        for proc in waiters:
            proc.start()
        for _ in waiters:
            assert ready.acquire(timeout=60)
        deadline = time.monotonic() + 30
        while int(status["waiting"].sum()) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert status["waiting"].tolist() == [1, 1, 1, 1]  # all four blocked, flagged
        time.sleep(1.0)  # a second of waiting: ~20 beats, nothing else
        control[Control.GO] = 1
        notified = time.perf_counter()
        notifier.notify()
        reports = [out.get() for _ in waiters]
        for proc in waiters:
            proc.join(10)
        assert status["waiting"].tolist() == [0, 0, 0, 0]  # nobody left a flag up
        for cpu, waited, woke in reports:
            assert cpu < 0.1, cpu  # a 0.2 ms poll would have spent most of the second awake
            assert waited >= 0.9
            assert woke - notified < BEAT_S / 2  # the notify woke it, not its next beat
    finally:
        del control, status
        blocks.close()


def test_notify_posts_only_flagged_waiters_and_clears_their_flags():
    """notifier.Notifier.notify: it posts the waiters whose flag is up (all, or those waiting for one
    reason) and clears those flags; nobody waiting costs nothing. Kept apart from the process
    test above, where a waiter whose beat ends as GO is set may leave before taking its post
    (a stale post costs its next wait one extra check, by design) and made this check flaky."""
    from architectures.transport.notifier import Notifier

    semaphores, flags = [threading.Semaphore(0) for _ in range(4)], np.zeros(4, np.int64)
    notifier = Notifier(semaphores, flags)

    def posted() -> list[int]:
        return [i for i, s in enumerate(semaphores) if s.acquire(blocking=False)]

    notifier.notify()
    assert posted() == []  # nobody waits: nothing is posted
    flags[:] = [Notifier.RATE, 0, Notifier.ROOM, Notifier.RATE]
    notifier.notify(Notifier.RATE)
    assert posted() == [0, 3] and flags.tolist() == [0, 0, Notifier.ROOM, 0]
    notifier.notify()
    assert posted() == [2] and flags.tolist() == [0, 0, 0, 0]


def _dead_pid() -> int:
    """A pid no process has: a child that has exited and been reaped."""
    proc = mp.get_context("spawn").Process(target=int)
    proc.start()
    proc.join()
    return proc.pid


def test_the_next_run_unlinks_blocks_a_dead_run_left_and_keeps_a_live_ones(monkeypatch, capsys):
    """A machine torn down whole kills the reaper too; the next run's shared-memory check reaps."""
    from architectures.transport.shared import check_shared_memory
    dead = _dead_pid()
    orphan = f"/dev/shm/pdqn_{dead}_test_orphan"
    live = SharedBlocks()
    try:
        live.allocate("kept", (16,), np.float32)
        with open(orphan, "wb") as f:
            f.write(b"\0" * 4096)
        monkeypatch.setenv("PDQN_KEEP_ORPHANS", "1")
        check_shared_memory({"x": 1}, "a test run")
        assert os.path.exists(orphan)  # opted out: left alone
        monkeypatch.delenv("PDQN_KEEP_ORPHANS")
        check_shared_memory({"x": 1}, "a test run")
        assert not os.path.exists(orphan)
        err = capsys.readouterr().err  # names every dead owner (this machine may hold others')
        assert "left by dead runs (pid " in err and str(dead) in err.split("(pid ")[1]
        assert len(leaked_segments(os.getpid())) == 1  # this live process's block stays
    finally:
        live.close()
        if os.path.exists(orphan):
            os.unlink(orphan)


def test_the_publication_rule_publishes_on_the_period_and_retries_a_busy_source():
    """WeightPublisher (transport/variables.py): on the period, never waiting on an actor that holds the
    channel's lock (the next update tries again), and one tally per publication that went through;
    a client copies a newer version in place and only then."""
    import torch

    from architectures.core.device import ActingWeights
    from architectures.core.networks import FlatLayout, build_q_network
    from architectures.transport.variables import ChannelClient, NullLock, WeightPublisher

    class BusyOnce:  # a lock an actor holds at the first try
        def __init__(self):
            self.tries = 0

        def acquire(self, block=True):
            self.tries += 1
            return block or self.tries > 1

        def release(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    online = build_q_network((4,), 2, (8,), False, seed=1)
    shapes = [tuple(p.shape) for p in online.parameters()]
    layout = FlatLayout(shapes)
    channel = WeightChannel(np.zeros(layout.size, np.float32), np.full(8, -1, np.int64), BusyOnce(), shapes)
    tallied = []
    publisher = WeightPublisher(ActingWeights(online), 5, channel, lambda v, s: tallied.append(v))
    publisher.after_update(4)
    assert channel.latest_version() == -1 and not tallied          # off the period
    publisher.after_update(5)
    assert channel.latest_version() == -1 and publisher.due        # the lock was busy: not waited for
    publisher.after_update(6)
    assert channel.latest_version() == 6 and tallied == [6]        # retried at the next update
    params = [np.zeros(s, np.float32) for s in shapes]
    client = ChannelClient(WeightChannel(channel.flat, channel.header, NullLock(), shapes), params)
    assert client.update() == 6 and client.update() is None
    assert all(np.array_equal(a, p.detach().numpy()) for a, p in zip(params, online.parameters()))
    flat = layout.flatten([p.detach().numpy() for p in online.parameters()])
    copies = [np.zeros(s, np.float32) for s in shapes]
    layout.unflatten_into(flat, copies)
    assert all(np.array_equal(a, b) for a, b in zip(copies, params))
    assert torch.equal(torch.cat([p.reshape(-1) for p in online.parameters()]), torch.from_numpy(flat))


def test_a_registration_made_while_the_reaper_is_being_told_another_is_queued_not_deadlocked(monkeypatch):
    """The garbage collector can finalize a semaphore (an unregistration) inside a send, in the same thread:
    that send must queue its line and the one under way write it next, in order (a plain lock deadlocked)."""
    import threading

    from architectures.transport import reaper

    written = []

    class Stdin:
        def write(self, text):
            written.append(text)
            if len(written) == 1:  # as a finalizer would, in the middle of the first write
                reaper._send("- semaphore /mp-collected")

    class Proc:
        stdin = Stdin()

        def poll(self):
            return None

    monkeypatch.setattr(reaper, "_proc", Proc())
    done = threading.Event()
    thread = threading.Thread(target=lambda: (reaper._send("+ shared_memory /pdqn_x"), done.set()), daemon=True)
    thread.start()
    assert done.wait(5), "the nested send deadlocked"
    assert written == ["+ shared_memory /pdqn_x\n", "- semaphore /mp-collected\n"]


BLOCKED_WORKER = '''
import sys, time
from architectures.transport.workers import worker_pool


def blocked(index, arrays, waiter, lock):
    lock.acquire()  # held by the main process, which never lets go: no check of the parent comes


if __name__ == "__main__":
    with worker_pool("worker", 1, 30.0) as pool:
        lock = pool.ctx.Lock()
        lock.acquire()
        pool.start(blocked, lambda i: lock)
        while pool.status["pid"][0] == 0:  # run_worker writes its pid just before the body
            time.sleep(0.01)
        time.sleep(0.5)  # into the acquire
        print(pool.status["pid"][0], flush=True)
        time.sleep(600)
'''


@pytest.mark.slow
def test_a_worker_blocked_on_a_lock_its_killed_main_process_held_dies_with_it(tmp_path):
    """A main process SIGKILLed while it holds a lock a worker waits on (a ring's, mid-drain) left
    the worker blocked for good, an orphan no parent check could reach (it leaked from a test of a
    killed sweep); the kernel now kills a worker with its main process (core.lifetime.die_with_parent)."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "blocked_worker.py"
    script.write_text(BLOCKED_WORKER)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    main = subprocess.Popen([sys.executable, str(script)], cwd=root, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": root})
    try:
        worker = int(main.stdout.readline())
    finally:
        main.kill()
        main.wait()

    from tests.test_actor_learner import alive  # a zombie counts as dead, only not yet reaped

    deadline = time.monotonic() + 10
    while alive([worker]) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive([worker]):
        os.kill(worker, signal.SIGKILL)  # leave no orphan behind the failure
        pytest.fail("the worker outlived its SIGKILLed main process")
    deadline = time.monotonic() + 10  # the reaper unlinks the killed run's blocks
    while any(name.split("_")[1] == str(main.pid) for name in leaked_segments()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [name for name in leaked_segments() if name.split("_")[1] == str(main.pid)]
