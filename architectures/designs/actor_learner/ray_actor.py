"""actor_learner's Actor on Ray: one Ray actor per acting slot, a shell around the one Actor (actor.py;
ray_backend.py is the learner).

It holds the Actor and its counters row; `collect(steps, weights, ...)` has it act that many env steps
with the newest weights and returns their transitions as one serialised record array. A replacement for
a lost actor (transport/ray_actors.py) continues the lost one's counters (env steps, episodes, clocks) on
a seed stream of its own (incarnation k acts on stream index + k * num_workers, which no other actor
draws), so the run's env-step count stays exact and no episode seed repeats.
"""

from __future__ import annotations

import os
import pickle
import time

import numpy as np
import torch

from architectures.core.config import DQNConfig
from architectures.core.env_guard import name_this_process
from architectures.core.errors import RunError
from architectures.core.replay import transition_dtype
from architectures.designs.actor_learner.actor import ACTOR_ROLES, make_actor
from architectures.run.worker_rows import write_episodes
from architectures.transport.ray_support import this_node
from architectures.transport.shared import RUNNING, STATUS_DTYPE
from architectures.transport.variables import FlatLayout, RayClient


def _ray_client(params: list) -> RayClient:
    return RayClient(params, FlatLayout([p.shape for p in params]))


# ============================================================================== acting (Ray actor)
class RayActor:
    """One actor: its own env loop (seeded per worker), a local Q-network, its counters.
    `resume`: a saved actor's {"actor": stream state, "row": counters}, or a replacement's
    {"actor": None, "row": the lost actor's counters, "incarnation": k}."""

    def __init__(self, index: int, cfg: DQNConfig, fault: tuple[str, int] | None, resume: dict | None):
        name_this_process(f"actor {index}, Ray actor, pid {os.getpid()}")  # as its env's errors name it
        self.failed: RunError | None = None
        try:
            self._start(index, cfg, fault, resume)
        except RunError as err:  # e.g. its env raised in reset: said by ready(), one line, not Ray's death
            self.failed = err

    def _start(self, index: int, cfg: DQNConfig, fault: tuple[str, int] | None, resume: dict | None) -> None:
        torch.set_num_threads(1)
        self.index, self.cfg = index, cfg
        self.run_steps = 0  # the run's env steps requested so far (free-running actors' epsilon)
        self.stats = np.zeros((), STATUS_DTYPE)
        incarnation = resume.get("incarnation", 0) if resume is not None else 0
        self.actor = make_actor(cfg, index, self.stats, _ray_client, lambda: self.run_steps,
                                stream=index + incarnation * cfg.num_workers, fault=fault)
        space = self.actor.loop.env.observation_space
        self.record = transition_dtype(tuple(space.shape), np.dtype(space.dtype))
        if resume is not None:  # a fresh episode; its stream, counters and clocks as saved
            self.actor.restore(resume["actor"] if resume["actor"] is not None else self.actor.replacing(resume["row"]))
            self.stats[()] = resume["row"]
        self.stats["pid"], self.stats["weights_version"], self.stats["state"] = os.getpid(), -1, RUNNING
        self.idle_since = None

    def ready(self) -> tuple[int, dict]:
        if self.failed is not None:
            raise self.failed
        return os.getpid(), this_node()

    def save(self) -> dict:
        return self.actor.save()

    def collect(self, steps: int, weights: list, after_checkpoint: bool, run_steps: int) -> tuple[bytes, np.ndarray]:
        """Act `steps` env steps; returns (pickled (records, priorities), this actor's counters).
        `weights` is the source's [version, reference] (in a list, so Ray does not fetch it unasked)."""
        self.run_steps = run_steps
        perf, s, actor, t = time.perf_counter, self.stats, self.actor, dict.fromkeys(ACTOR_ROLES, 0.0)
        before = actor.times()
        t0 = perf()
        if self.idle_since is not None and not after_checkpoint:  # time stopped at a sync point is evaluation: off the clock
            t["wait"] = t0 - self.idle_since
        actor.weights.offer(weights)  # taken in at the first step, if the version moved
        # ------------------------------------------------------------------ acting
        rows = np.empty(steps + self.cfg.n_step, self.record)  # a batch completes at most steps + n - 1
        priorities = np.zeros(len(rows), np.float32)
        count = 0
        for _ in range(steps):
            transitions = actor.step()
            t4 = perf()
            for transition in transitions:
                rows[count] = transition
                priorities[count] = actor.priority(transition)
                count += 1
            t["handoff"] += perf() - t4
        # ------------------------------------------------------------------ hand-off (one message per batch)
        t6 = perf()
        payload = pickle.dumps((rows[:count], priorities[:count]), protocol=pickle.HIGHEST_PROTOCOL)
        s["transitions"] += count
        s["env_steps"] = actor.steps
        write_episodes(s, actor.loop.stats)
        t["handoff"] += perf() - t6
        t.update({role: seconds - before[role] for role, seconds in actor.times().items()})
        for role, seconds in t.items():
            s[f"t_{role}"] += seconds
        self.idle_since = perf()
        return payload, s.copy()
