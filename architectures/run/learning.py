"""Learning from a replay, for the designs that have one: the updates owed, sampling, the
update, and their timers and diagnostics.

A design whose learner samples a replay builds one `ReplayLearning` beside its `Run`; it attaches
itself to the run as the part "learning", so a checkpoint holds the learner, the replay and its
RNG with everything else, and the run's log and result read it. `learn_owed(env_steps)` does the
updates `utd` owes after that many env steps; `sources` turns on the per-source diagnostics
(the policy lag of every sampled transition and each source's share of the sampled batches) for
designs that learn from several workers; single_env leaves them off, keeping its hot loop as it
was. `after_update()` runs after every update (weight publication, resets). A design without
replay (PQN) or whose workers learn (hogwild) does not take it.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from architectures.core.diagnostics import PolicyLag
from architectures.core.dqn import DQNLearner
from architectures.core.envs import rng_seeds
from architectures.core.replay import ReplayBuffer
from architectures.core.schedules import UpdateRatio
from architectures.run.base import LearningLog, Run


class ReplayLearning:
    """The replay-driven learner of a run (see the module docstring)."""

    def __init__(self, run: Run, learner: DQNLearner, replay: ReplayBuffer, *, sources: int = 0,
                 after_update: Callable[[], None] | None = None):
        cfg = run.cfg
        self.run, self.cfg, self.learner, self.replay, self.after_update = run, cfg, learner, replay, after_update
        self.replay_rng = np.random.default_rng(rng_seeds(cfg.seed)[1])
        self.ratio = UpdateRatio(cfg.utd, cfg.learning_starts)
        self.lag = PolicyLag(seed=cfg.seed) if sources else None
        self.sampled = np.zeros(sources, dtype=np.int64) if sources else None
        self.sample_s = self.update_s = self.diag_s = 0.0  # hot-loop timers, the result's components
        self.loss_sum = 0.0  # TD losses since the last log
        run.attach("learning", self)

    @property
    def updates(self) -> int:
        return self.learner.version

    def owed(self, env_steps: int) -> int:
        return self.ratio.target_updates(env_steps) - self.learner.version

    def learn_owed(self, env_steps: int, limit: int | None = None) -> int:
        """Do the updates owed after `env_steps` env steps (at most `limit`); returns how many."""
        learner, replay, cfg, perf = self.learner, self.replay, self.cfg, time.perf_counter
        owed = self.ratio.target_updates(env_steps) - learner.version
        if limit is not None:
            owed = min(owed, limit)
        done = 0
        while done < owed and replay.size > 0:
            t0 = perf()
            batch = replay.sample(cfg.batch_size, self.replay_rng)
            t1 = perf()
            if self.lag is not None:
                self.lag.record(learner.version, batch["version"])
                self.sampled += np.bincount(batch["source"], minlength=len(self.sampled))
            t2 = perf()
            loss = learner.update(batch)  # also syncs the target on its period
            if not math.isfinite(loss):  # a float already: the check costs nothing
                q = learner.last_q_taken
                raise self.run.diverged(f"non-finite TD loss ({loss})", learner.version, env_steps,
                                        float(q.abs().max()) if q is not None else float("nan"))
            self.loss_sum += loss
            if cfg.prioritized:
                replay.update_priorities(batch["indices"], learner.last_td_abs.cpu().numpy())
            t3 = perf()
            self.sample_s += t1 - t0
            self.diag_s += t2 - t1
            self.update_s += t3 - t2
            done += 1
            if self.after_update is not None:
                self.after_update()
        return done

    def log_stats(self) -> LearningLog:
        """The run's log of the learning since the last one; the loss sum starts again."""
        stats = LearningLog(self.learner.version, self.loss_sum, self.learner.last_q_taken, self.lag)
        self.loss_sum = 0.0
        return stats

    def components(self, updates: int) -> dict[str, tuple[float, int]]:
        """The result's time-breakdown rows of learning: name -> (seconds, calls)."""
        parts = {"sample": (self.sample_s, updates), "update": (self.update_s, updates)}
        if self.lag is not None:
            parts["diagnostics"] = (self.diag_s, updates)
        return parts

    def state(self) -> dict:
        return {"learner": self.learner.state_dict(),
                "replay": self.replay.state_dict() if self.cfg.checkpoint_replay else None,
                "replay_rng": self.replay_rng.bit_generator.state,
                "lag": self.lag.state_dict() if self.lag is not None else None,
                "sampled": None if self.sampled is None else self.sampled.copy(),
                "hot_seconds": {"sample": self.sample_s, "update": self.update_s, "diagnostics": self.diag_s},
                "loss_sum": self.loss_sum}

    def restore(self, state: dict) -> None:
        self.learner.load_state_dict(state["learner"])
        if state["replay"] is not None:
            self.replay.load_state_dict(state["replay"])
        self.replay_rng.bit_generator.state = state["replay_rng"]
        if self.lag is not None:
            self.lag.load_state_dict(state["lag"])
            self.sampled[:] = state["sampled"]
        hot = state["hot_seconds"]
        self.sample_s, self.update_s, self.diag_s = hot["sample"], hot["update"], hot["diagnostics"]
        self.loss_sum = state["loss_sum"]
