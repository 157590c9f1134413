"""actor_learner in one process (`backend=inprocess`): the same Actor, learner loop, weight publication,
rate limiter and sync points as over shared memory or Ray, with the actors stepped by the learner's own
loop. For millisecond tests of the roles, and a run a debugger can step through: nothing else runs, so
nothing times out while it is paused, and a seed gives the same run every time.

The transport steps each actor in turn, `SLICE` env steps at most, within its share of the next sync
point and while the rate limiter lets actors insert; it hands their transitions straight to the replay.
It never blocks: when the learner cannot learn, the next exchange steps the actors. It is not a speed
measurement: acting and learning take turns on one core.

    python -m architectures actor_learner --backend inprocess --num_workers 2 --total_env_steps 20000
"""

from __future__ import annotations

import time

import numpy as np
import torch

from architectures.core.config import DQNConfig
from architectures.core.dqn import build_learner
from architectures.core.envs import env_spec
from architectures.core.metrics import NullReporter, Reporter
from architectures.core.networks import FlatLayout
from architectures.core.replay import make_replay, transition_dtype
from architectures.designs.actor_learner.actor import Actor, make_actor
from architectures.designs.actor_learner.actor_stats import ActorStats
from architectures.designs.actor_learner.runner import learn
from architectures.run.base import Run
from architectures.run.learning import ReplayLearning
from architectures.run.sync_points import room
from architectures.run.worker_rows import publish_times, write_episodes
from architectures.transport.channels import WeightChannel
from architectures.transport.shared import DONE, RUNNING, STATUS_DTYPE
from architectures.transport.variables import ChannelClient, NullLock

SLICE = 16
"""Env steps an actor makes per turn: the shared-memory actors' rate-limiter cadence."""


class InProcessTransport:
    """actor_learner's data in one process (runner.Transport; see the module docstring)."""

    def __init__(self, run: Run, learning: ReplayLearning, actors: list[Actor], channel: WeightChannel,
                 actor_stats: ActorStats, record: np.dtype):
        self.run, self.learning, self.actors, self.channel = run, learning, actors, channel
        self.actor_stats, self.status = actor_stats, actor_stats.status
        self.free = run.cfg.actor_quotas == "free"
        self.rows = np.empty(SLICE + run.cfg.n_step, record)  # a turn completes at most SLICE + n - 1
        self.priorities = np.zeros(len(self.rows), np.float32)

    def room(self, i: int) -> int:
        """Env steps actor i may still make before the next sync point (free: whoever steps first, here in turn)."""
        steps = self.status["env_steps"]
        return room(self.run.stops, len(self.actors), i, self.run.next_stop, int(steps[i]), int(steps.sum()), self.free)

    def exchange(self) -> int:
        limiter, learner = self.learning.limiter, self.learning.learner
        for i, actor in enumerate(self.actors):
            count, row = 0, self.status[i]
            for _ in range(min(SLICE, self.room(i))):
                if not limiter.can_insert(int(self.status["env_steps"].sum()), learner.version):
                    break
                for transition in actor.step():
                    self.rows[count], self.priorities[count] = transition, actor.priority(transition)
                    count += 1
                row["env_steps"] = actor.steps
            if count:
                began = time.perf_counter()
                self.actor_stats.store(self.rows[:count], self.priorities[:count], learner.version,
                                       self.learning.replay)
                self.actor_stats.tally.seconds += time.perf_counter() - began
            self.actor_stats.tally.transitions += count
            row["transitions"] += count
            write_episodes(row, actor.loop.stats)
            publish_times(row, actor.times())
        return int(self.status["env_steps"].sum())

    def at_sync_point(self, env_steps: int) -> bool:
        return env_steps == self.run.stops[self.run.next_stop].env_steps

    def release(self) -> None:
        pass  # the actors step only when this loop asks

    def wait(self) -> float:
        return 0.0  # nothing runs meanwhile: the next exchange steps the actors

    def health(self) -> None:
        self.actor_stats.publications.check(self.channel.latest_version())


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    torch.set_num_threads(cfg.learner_thread_count)
    started = time.perf_counter()
    spec, n = env_spec(cfg.env_id), cfg.num_workers
    learner = build_learner(spec, cfg)
    replay = make_replay(cfg, spec.obs_shape, spec.obs_dtype)
    status = np.zeros(n, STATUS_DTYPE)
    status["weights_version"], status["state"] = -1, RUNNING
    layout = FlatLayout([tuple(p.shape) for p in learner.online.parameters()])
    channel = WeightChannel(np.zeros(layout.size, np.float32), np.full(8, -1, np.int64), NullLock(), layout.shapes)
    actor_stats = ActorStats(cfg, status)
    run = Run("actor_learner", cfg, reporter, learner.online)
    learning = ReplayLearning(run, learner, replay, sources=n, weights=channel,
                              published=actor_stats.publications.published)
    run.attach("actors", actor_stats)
    actors = [make_actor(cfg, i, status[i], lambda params: ChannelClient(channel, params),
                         lambda: int(status["env_steps"].sum())) for i in range(n)]
    actor_stats.collect = lambda: [each.save() for each in actors]
    if run.resume():
        for each, state in zip(actors, actor_stats.resumed_actors):
            each.restore(state)
    learning.publisher.now(learner.version)
    transport = InProcessTransport(run, learning, actors, channel, actor_stats,
                                   transition_dtype(spec.obs_shape, spec.obs_dtype))
    startup_seconds = time.perf_counter() - started
    run.start_clock()
    actor_stats.watch(run)
    try:
        env_steps = learn(run, learning, transport, actor_stats)
    finally:
        for actor in actors:
            actor.close()
    status["state"] = DONE
    result = actor_stats.result(run, env_steps=env_steps, startup_seconds=startup_seconds)
    result.update(backend="inprocess")
    return result
