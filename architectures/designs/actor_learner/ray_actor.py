"""actor_learner's Actor on Ray: one Ray actor per acting slot (ray_backend.py is the learner).

Its own env loop (seeded per worker), a local Q-network and its counters; `collect(steps,
weights, ...)` acts that many env steps with the newest weights and returns their transitions
as one serialised record array. A replacement for a lost actor (transport/ray_actors.py)
continues the lost one's counters (env steps, episodes, clocks) on a seed stream of its own
(incarnation k acts on stream index + k * num_workers, which no other actor draws), so the
run's env-step count stays exact and no episode seed repeats.
"""

from __future__ import annotations

import os
import pickle
import time

import numpy as np
import torch

from architectures.core.config import DQNConfig
from architectures.core.env_guard import name_this_process
from architectures.core.envs import rng_seeds, training_episode_seeds
from architectures.core.errors import RunError
from architectures.core.networks import GreedyPolicy, build_q_network
from architectures.core.replay import transition_dtype
from architectures.designs.actor_learner.actor_stats import ACTOR_ROLES, initial_priority
from architectures.run.acting import EnvLoop, actor_epsilon
from architectures.run.worker_rows import write_episodes
from architectures.transport.ray_support import this_node
from architectures.transport.shared import RUNNING, STATUS_DTYPE
from architectures.transport.variables import FlatLayout, RayClient
from architectures.transport.workers import inject_fault


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
        self.index, self.cfg, self.fault = index, cfg, fault
        self.run_steps = 0  # the run's env steps requested so far (free-running actors' epsilon)
        self.loop = EnvLoop(cfg, index, None, actor_epsilon(cfg, index, lambda: self.run_steps))
        space = self.loop.env.observation_space
        net = build_q_network(space.shape, int(self.loop.env.action_space.n), cfg.hidden_sizes, cfg.layer_norm,
                              cfg.seed)
        params = [p.detach().numpy() for p in net.parameters()]  # the policy acts through views of these
        self.weights = RayClient(params, FlatLayout([p.shape for p in params]))
        incarnation = resume.get("incarnation", 0) if resume is not None else 0
        stream = index + incarnation * cfg.num_workers  # the first incarnation acts on stream `index`
        acting = rng_seeds(cfg.seed)[0].spawn(max(cfg.num_workers, stream + 1))[stream]
        self.loop.policy = GreedyPolicy(net, np.random.default_rng(acting))
        self.record = transition_dtype(tuple(space.shape), np.dtype(space.dtype))
        self.stats = np.zeros((), STATUS_DTYPE)
        if resume is not None:  # a fresh episode; its stream, counters and clocks as saved
            self.loop.restore(resume["actor"] if resume["actor"] is not None else self._replacing(resume, stream))
            self.stats[()] = resume["row"]
        self.stats["pid"], self.stats["weights_version"], self.stats["state"] = os.getpid(), -1, RUNNING
        self.idle_since = None

    def _replacing(self, resume: dict, stream: int) -> dict:
        """The stream state a replacement starts from: the lost actor's counters, fresh seeds."""
        row, loop = resume["row"], self.loop
        loop.seeds = training_episode_seeds(self.cfg.seed, stream)
        first = next(loop.seeds)
        return {**loop.state(), "steps": int(row["env_steps"]), "episode_seed": first, "pending": 0,
                "stats": {"episodes": int(row["episodes"]), "length_sum": int(row["episode_length_sum"]),
                          "return_sum": float(row["episode_return_sum"])}}

    def ready(self) -> tuple[int, dict]:
        if self.failed is not None:
            raise self.failed
        return os.getpid(), this_node()

    def state(self) -> dict:
        return self.loop.state()

    def collect(self, steps: int, weights: list, after_checkpoint: bool, run_steps: int) -> tuple[bytes, np.ndarray]:
        """Act `steps` env steps; returns (pickled (records, priorities), this actor's counters).
        `weights` is [version, reference] (in a list, so Ray does not fetch it unasked)."""
        self.run_steps = run_steps
        perf, s, loop, t = time.perf_counter, self.stats, self.loop, dict.fromkeys(ACTOR_ROLES, 0.0)
        before = {"act": loop.act_s, "env_step": loop.env_s, "n_step": loop.fold_s}
        t0 = perf()
        if self.idle_since is not None and not after_checkpoint:  # parked time is evaluation: off the clock
            t["wait"] = t0 - self.idle_since
        # ------------------------------------------------------------------ syncing (pull weights)
        self.weights.offer(weights)
        frozen = self.fault and self.fault[0] == "freeze_weights" and loop.steps >= self.fault[1]
        if not frozen and self.weights.update() is not None:
            s["weights_version"] = self.weights.version
            s["weight_fetches"] += 1
        t["weight_sync"] = perf() - t0
        # ------------------------------------------------------------------ acting
        rows = np.empty(steps + self.cfg.n_step, self.record)  # a batch completes at most steps + n - 1
        priorities = np.zeros(len(rows), np.float32)
        count = 0
        for _ in range(steps):
            if self.fault and loop.steps >= self.fault[1] and self.fault[0] != "freeze_weights":
                inject_fault(self.fault[0])
            transitions = loop.step(int(s["weights_version"]))
            t4 = perf()
            for transition in transitions:
                rows[count] = transition
                if self.cfg.prioritized:
                    priorities[count] = initial_priority(loop.policy, transition)
                count += 1
            t["handoff"] += perf() - t4
        # ------------------------------------------------------------------ hand-off (one message per batch)
        t6 = perf()
        payload = pickle.dumps((rows[:count], priorities[:count]), protocol=pickle.HIGHEST_PROTOCOL)
        s["transitions"] += count
        s["env_steps"] = loop.steps
        write_episodes(s, loop.stats)
        t["handoff"] += perf() - t6
        t.update(act=loop.act_s - before["act"], env_step=loop.env_s - before["env_step"],
                 n_step=loop.fold_s - before["n_step"])
        for role, seconds in t.items():
            s[f"t_{role}"] += seconds
        self.idle_since = perf()
        return payload, s.copy()
