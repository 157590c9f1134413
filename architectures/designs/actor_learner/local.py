"""actor_learner (Ape-X style): actor processes only act; one learner updates; replay joins them.

Same section order as single_env.py; what differs is the data flow:
- acting happens in `num_workers` spawned actor processes, each with its own env (seeded per
  worker) and a local copy of the Q-network;
- transitions travel actor -> learner through per-actor shared-memory rings
  (`channels.TransitionRing`) that the learner drains into the ONE replay buffer, which only the
  learner touches, so no sample can ever be half-written;
- syncing is explicit: every `weight_sync_period` updates the learner publishes its weights
  with a version number (`channels.WeightChannel`); actors pick them up between env steps
  without blocking the learner, and a watchdog fails the run if one stops picking them up;
- `utd` is enforced on the GLOBAL env-step count as Acme's rate limiter does: the learner
  waits when it is ahead, actors wait when it owes more than `utd_slack_steps` worth of updates;
- at every sync point (each holdout checkpoint, each checkpoint save: `run.sync_points.stops`) the
  actors stop exactly on their share of its env steps, the learner drains the rings, catches up
  its owed updates, then evaluates and/or saves, off the clock. A save holds the learner's
  state and every actor's stream state; a resumed actor starts a fresh episode.

The backend=ray variant is designs/actor_learner/ray_backend.py (chosen in architectures/__init__).

Run it without Sacred:  python -m architectures actor_learner --num_workers 2 --total_env_steps 20000
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from architectures.core.config import DQNConfig
from architectures.core.dqn import build_learner
from architectures.core.envs import EnvSpec, env_spec
from architectures.core.metrics import NullReporter, Reporter
from architectures.core.rate_limiter import RateLimiter
from architectures.core.replay import make_replay, transition_dtype
from architectures.designs.actor_learner.actor import make_actor
from architectures.designs.actor_learner.actor_stats import ActorStats
from architectures.designs.actor_learner.runner import Throttle, learn
from architectures.run.base import Run
from architectures.run.learning import ReplayLearning
from architectures.run.sync_points import StepQuota, all_at_sync_point, stops, wait_at_sync_point
from architectures.run.worker_rows import check_design_memory, publish_times, write_episodes
from architectures.transport.notifier import Notifier, Waiter
from architectures.transport.channels import TransitionRing, WeightChannel
from architectures.transport.variables import ChannelClient
from architectures.transport.shared import DONE, LOCK_BYTES, STATUS_DTYPE, Control, block_bytes
from architectures.transport.workers import (
    warn_if_oversubscribed,
    worker_fault,
    worker_pool,
    yield_to_learner,
)

RING_CAPACITY = 4096
"""Transitions an actor may hand off before the learner drains them (then the actor waits)."""


def shared_memory_needs(cfg: DQNConfig, spec: EnvSpec, param_shapes: list[tuple]) -> dict[str, int]:
    """What a run maps in /dev/shm, by part (tests/test_resume.py checks it against the blocks)."""
    n, record = cfg.num_workers, transition_dtype(spec.obs_shape, spec.obs_dtype)
    ring = block_bytes((RING_CAPACITY,), record) + block_bytes((RING_CAPACITY,), np.float32) + block_bytes(
        (2, 8), np.int64)
    num_params = sum(int(np.prod(shape)) for shape in param_shapes)
    return {"rings": n * ring, "weights": block_bytes((num_params,), np.float32) + block_bytes((8,), np.int64),
            "status": block_bytes((n,), STATUS_DTYPE) + block_bytes(Control.SHAPE, np.int64),
            "locks": (n + 4) * LOCK_BYTES}  # a lock per ring, the weights' and the claims', the error queue's two


def preflight(cfg: DQNConfig) -> None:
    check_design_memory(cfg, shared_memory_needs, f"actor_learner with {cfg.num_workers} actor(s)")


@dataclass
class ActorArgs:
    """What actor process `index` is given beside the shared blocks (transport.workers.run_worker)."""

    cfg: DQNConfig
    ring_lock: Any
    weight_lock: Any
    claim_lock: Any  # actor_quotas=free: the run's claimed-steps count
    state_pipe: Any  # its checkpoint state goes to the learner on this
    param_shapes: list[tuple]
    resume: dict | None  # {"actor": stream state, "next_stop": k} of a resumed run


# ============================================================================== acting (actor process)
def _act(index: int, arrays: dict, waiter: Waiter, args: ActorArgs) -> None:
    # ------------------------------------------------------------------ setup
    cfg, resume = args.cfg, args.resume
    torch.set_num_threads(1)
    yield_to_learner(cfg.actor_nice)
    status, control = arrays["status"][index], Control(arrays["control"])
    ring = TransitionRing(arrays[f"ring{index}_records"], arrays[f"ring{index}_priorities"],
                          arrays[f"ring{index}_counters"], args.ring_lock, status)
    channel = WeightChannel(arrays["weights"], arrays["weights_header"], args.weight_lock, args.param_shapes)
    all_steps = arrays["status"]["env_steps"]  # (N,) every actor's published env steps
    actor = make_actor(cfg, index, status, lambda params: ChannelClient(channel, params),
                       lambda: control[Control.CLAIMED], fault=worker_fault(index))
    first_stop = 0
    if resume is not None:  # a fresh episode; steps, seeds, RNG and statistics as saved
        actor.restore(resume["actor"])
        first_stop = resume["next_stop"]
    run_stops = stops(cfg)
    quota = StepQuota(cfg, index, run_stops, control, args.claim_lock)  # equal shares, or free-running
    limiter = RateLimiter.from_config(cfg)  # the learner's own, read through the shared counts
    waiter.until(lambda: channel.latest_version() >= 0)  # published before the actors start
    actor.weights.update()
    status["weights_version"] = actor.weights.version
    waiter.ready()
    perf = time.perf_counter
    handoff_s, wait_s = float(status["t_handoff"]), float(status["t_wait"])

    for k in range(first_stop, len(run_stops)):
        quota.begin(k)
        while quota.may_step(actor.steps):
            # -------------------------------------------------------------- rate limiter
            if actor.steps % 16 == 0:  # wait while the learner owes more than the slack in updates
                wait_s += waiter.until(
                    lambda: limiter.can_insert(int(all_steps.sum()), control[Control.LEARNER_VERSION]), Notifier.RATE)
            # -------------------------------------------------------------- acting (with the newest weights)
            transitions = actor.step()
            # -------------------------------------------------------------- hand-off
            t4 = perf()
            waited = 0.0
            for transition in transitions:
                if not ring.has_room():
                    waited += waiter.until(ring.has_room, Notifier.ROOM)
                ring.write(transition, actor.priority(transition))
            ring.publish(actor.steps)
            if control[Control.MAIN_WAITING] and limiter.can_sample(int(all_steps.sum()),
                                                                    control[Control.LEARNER_VERSION]):
                waiter.main_notifier.notify()  # the learner waits for data, and now it is owed an update
            handoff_s += perf() - t4 - waited
            wait_s += waited
            if actor.loop.ended:
                write_episodes(status, actor.loop.stats)
            if actor.steps % 256 == 0:
                waiter.check()
                publish_times(status, {**actor.times(), "handoff": handoff_s, "wait": wait_s})
        # ------------------------------------------------------------------ stop at the sync point
        publish_times(status, {**actor.times(), "handoff": handoff_s, "wait": wait_s})
        wait_at_sync_point(k, run_stops, status, control, waiter, args.state_pipe, actor.save)
    actor.close()
    status["state"] = DONE


# ============================================================================== the transport (main process)
class SharedMemoryTransport:
    """actor_learner's data over shared memory (runner.Transport): each actor process pushes its
    transitions into its ring and stops at every sync point on its own; the learner drains the rings,
    blocks on the notifier when it is ahead, and releases the actors past each stop."""

    def __init__(self, run: Run, learning: ReplayLearning, pool, rings: list[TransitionRing], channel: WeightChannel,
                 actor_stats: ActorStats):
        self.run, self.learning, self.pool, self.rings, self.channel = run, learning, pool, rings, channel
        self.actor_stats, self.status, self.control = actor_stats, pool.status, pool.control
        self.due_check, self.arrived_before = Throttle(), 0

    def after_update(self) -> None:
        """After every update: the actors' rate limiter reads the learner's version; those it held go on once it opens."""
        version = self.learning.learner.version
        self.control[Control.LEARNER_VERSION] = version
        notifier = self.pool.workers_notifier
        if notifier.waiting(Notifier.RATE) and self.learning.limiter.can_insert(int(self.status["env_steps"].sum()),
                                                                                version):
            notifier.notify(Notifier.RATE)

    def exchange(self) -> int:
        began, stats = time.perf_counter(), self.actor_stats
        stats.tally.transitions += sum(ring.drain(self.insert) for ring in self.rings)
        stats.tally.seconds += time.perf_counter() - began
        self.pool.workers_notifier.notify(Notifier.ROOM)  # actors waiting for room in their rings may go on
        return sum(ring.env_steps_seen for ring in self.rings)

    def insert(self, rows: np.ndarray, priorities: np.ndarray) -> None:
        """A drained ring's rows into the replay."""
        self.actor_stats.store(rows, priorities, self.learning.learner.version, self.learning.replay)

    def at_sync_point(self, env_steps: int) -> bool:
        return all_at_sync_point(self.run, self.status, env_steps)

    def release(self) -> None:
        self.control[Control.RELEASED] = self.run.next_stop
        self.pool.workers_notifier.notify()

    def wait(self) -> float:
        """Block (no CPU) until an actor brings an owed update or stops; the actors notify only then,
        and only while the learner waits."""
        self.arrived_before = int(self.status["at_sync_point"].sum())
        return self.pool.main_notifier.wait_until(0, self.owed_or_arrived, self.health)

    def owed_or_arrived(self) -> bool:
        return (self.learning.limiter.can_sample(int(self.status["env_steps"].sum()), self.learning.learner.version)
                or int(self.status["at_sync_point"].sum()) != self.arrived_before)

    def health(self) -> None:
        """Every 0.2 s, waiting or not: a dead, hung or weight-starved actor fails the run."""
        if self.due_check():
            self.pool.check()
            self.actor_stats.publications.check(self.channel.latest_version())


# ============================================================================== the learner (main process)
def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    preflight(cfg)  # shared memory that cannot fit stops the run here, before any block or actor
    warn_if_oversubscribed(cfg.num_workers, "actor processes plus one learner")
    # ------------------------------------------------------------------ setup
    torch.set_num_threads(cfg.learner_thread_count)
    started = time.perf_counter()
    spec, n = env_spec(cfg.env_id), cfg.num_workers
    learner = build_learner(spec, cfg)
    replay = make_replay(cfg, spec.obs_shape, spec.obs_dtype)
    with worker_pool("actor", n, cfg.worker_timeout_s) as pool:
        blocks, status, control = pool.blocks, pool.status, pool.control
        ring_arrays = [TransitionRing.allocate(blocks, f"ring{i}", RING_CAPACITY,
                                               transition_dtype(spec.obs_shape, spec.obs_dtype)) for i in range(n)]
        shapes = [tuple(p.shape) for p in learner.online.parameters()]
        weight_arrays = WeightChannel.allocate(blocks, shapes)
        ring_locks, weight_lock, claim_lock = [pool.ctx.Lock() for _ in range(n)], pool.ctx.Lock(), pool.ctx.Lock()
        channel = WeightChannel(weight_arrays["weights"], weight_arrays["weights_header"], weight_lock, shapes)
        actor_stats = ActorStats(cfg, status)  # staleness at hand-off, publications, hand-off tally
        run = Run("actor_learner", cfg, reporter, learner.online)
        learning = ReplayLearning(run, learner, replay, sources=n, weights=channel,
                                  published=actor_stats.publications.published)
        rings = [TransitionRing(**ring_arrays[i], lock=ring_locks[i], status_row=status[i]) for i in range(n)]
        transport = SharedMemoryTransport(run, learning, pool, rings, channel, actor_stats)
        learning.after_update = transport.after_update
        run.attach("actors", actor_stats)
        actor_stats.collect = pool.collect  # each actor's stream state, from its pipe at a sync point
        actor_states = [None] * n
        if run.resume():  # actors continue their streams; the rings start empty
            actor_states = [{"actor": state, "next_stop": run.next_stop} for state in actor_stats.resumed_actors]
            control[Control.RELEASED] = run.next_stop
            control[Control.LEARNER_VERSION] = learner.version
            control[Control.CLAIMED] = run.resumed_from_env_steps
        learning.publisher.now(learner.version)  # the actors' first weights, before they start
        pool.start(_act, lambda i: ActorArgs(cfg, ring_locks[i], weight_lock, claim_lock, pool.state_writers[i], shapes,
                                             actor_states[i]))
        pool.go(max(120.0, cfg.worker_timeout_s))
        startup_seconds = time.perf_counter() - started
        run.start_clock(workers=lambda: status["pid"].tolist())
        actor_stats.watch(run)  # the actors' shares and epsilons, acting weights' age, busy roles: live curves
        env_steps = learn(run, learning, transport, actor_stats)
        actor_stats.status = pool.finish()  # a copy: the blocks go next
    return actor_stats.result(run, env_steps=env_steps, startup_seconds=startup_seconds)
