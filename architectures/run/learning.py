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

A learner on a device (CUDA) learns through core/device_step.py: the replay's new rows are
copied to the device before each update, the update runs there (eager or as a CUDA graph) and
its loss and diagnostics are read once per log; `acting` is the host copy of the weights that
the design acts and evaluates with, published every `weight_sync_period` updates. A non-finite
loss then stops the run at the log that reads it, not at its update. Prioritized replay keeps the
host sampler there (its sum tree is on the host), paying a copy and a read per update.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np
import torch

from architectures.core.device import ActingWeights, host_float
from architectures.core.device_replay import DeviceReplay
from architectures.core.device_step import DeviceLag, DeviceStep
from architectures.core.diagnostics import PolicyLag
from architectures.core.dqn import DQNLearner
from architectures.core.envs import rng_seeds
from architectures.core.replay import ReplayBuffer
from architectures.core.rate_limiter import RateLimiter
from architectures.run.base import LearningLog, Run
from architectures.transport.variables import VariableSource, WeightPublisher


class ReplayLearning:
    """The replay-driven learner of a run (see the module docstring)."""

    def __init__(self, run: Run, learner: DQNLearner, replay: ReplayBuffer, *, sources: int = 0,
                 after_update: Callable[[], None] | None = None, weights: VariableSource | None = None,
                 published: Callable[[int, float], None] | None = None):
        """`weights`: where actors get the learner's weights (published on the one rule, WeightPublisher),
        `published(version, seconds)` after each publication; None for a design that acts in this process."""
        cfg = run.cfg
        self.run, self.cfg, self.learner, self.replay, self.after_update = run, cfg, learner, replay, after_update
        self.replay_rng = np.random.default_rng(rng_seeds(cfg.seed)[1])
        self.limiter = RateLimiter.from_config(cfg)  # the learner's side; actors read the same counts
        self.lag = PolicyLag(seed=cfg.seed) if sources else None
        self.sampled = np.zeros(sources, dtype=np.int64) if sources else None
        self.sample_s = self.update_s = self.diag_s = 0.0  # hot-loop timers, the result's components
        self.loss_sum = 0.0  # TD losses since the last log
        self.acting = ActingWeights(learner.online)  # what the design acts and evaluates with
        self.publisher = WeightPublisher(self.acting, cfg.weight_sync_period, weights, published)
        self.device_step = None
        if self.acting.separate and not cfg.prioritized:
            self.device_replay = DeviceReplay(replay, learner.device, cfg.batch_size, seed=cfg.seed)
            self.device_step = DeviceStep(learner, self.device_replay, sources,
                                          graph=cfg.cuda_graph and learner.device.type == "cuda")
            self.lag = DeviceLag(self.device_step) if sources else None
        if self.acting.separate:
            run.play_with(self.acting.net, self.publish)
        run.attach("learning", self)

    @property
    def updates(self) -> int:
        return self.learner.version

    def owed(self, env_steps: int) -> int:
        return self.limiter.owed(env_steps, self.learner.version)

    def learn_owed(self, env_steps: int, limit: int | None = None) -> int:
        """Do the updates owed after `env_steps` env steps (at most `limit`); returns how many."""
        learner, replay, cfg, perf = self.learner, self.replay, self.cfg, time.perf_counter
        owed = self.limiter.owed(env_steps, learner.version)
        if limit is not None:
            owed = min(owed, limit)
        if self.device_step is not None:
            return self._learn_on_device(owed)
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
            self._after_update()
        return done

    def _learn_on_device(self, owed: int) -> int:
        """The device's updates: the new rows copied over (timed as `sample`), then each update
        queued with no host read (timed as `update`: on CUDA the host's launches, not the GPU's
        work, which shows where the host waits for it: a publication, a log)."""
        perf, done = time.perf_counter, 0
        while done < owed and self.replay.size > 0:
            t0 = perf()
            self.device_replay.sync()
            t1 = perf()
            self.device_step()
            self.sample_s += t1 - t0
            self.update_s += perf() - t1
            done += 1
            self._after_update()
        return done

    def _after_update(self) -> None:
        self.publisher.after_update(self.learner.version)
        if self.after_update is not None:
            self.after_update()

    def log_stats(self, env_steps: int) -> LearningLog:
        """The run's log of the learning since the last one; the loss sum starts again. A device
        learner's losses are read here, and a non-finite one stops the run."""
        if self.device_step is not None:
            self.loss_sum = self.device_step.read_loss()
            if not math.isfinite(self.loss_sum):
                q = self.learner.last_q_taken
                raise self.run.diverged(f"non-finite TD loss (summed over the updates up to {self.learner.version:,})",
                                        self.learner.version, env_steps,
                                        host_float(q.abs().max()) if q is not None else float("nan"))
        stats = LearningLog(self.learner.version, self.loss_sum, self.learner.last_q_taken, self.lag,
                            getattr(self.learner, "last_grad_norm", None))
        self.loss_sum = 0.0
        return stats

    def publish(self) -> None:
        """Refresh the acting copy now (before a holdout, at a sync point)."""
        self.acting.publish(self.learner.version)

    @property
    def sampled_counts(self) -> np.ndarray | None:
        """Each source's count of sampled transitions (None without per-source diagnostics)."""
        if self.device_step is not None and self.sampled is not None:
            return self.device_step.read_sampled()
        return self.sampled

    def components(self, updates: int) -> dict[str, tuple[float, int]]:
        """The result's time-breakdown rows of learning: name -> (seconds, calls)."""
        parts = {"sample": (self.sample_s, updates), "update": (self.update_s, updates)}
        if self.lag is not None:
            parts["diagnostics"] = (self.diag_s, updates)
        return parts

    def save(self) -> dict:
        return {"learner": self.learner.state_dict(),
                "replay": self.replay.state_dict() if self.cfg.checkpoint_replay else None,
                "replay_rng": self.replay_rng.bit_generator.state,
                "lag": self.lag.state_dict() if self.lag is not None else None,
                "sampled": None if self.sampled is None else self.sampled_counts.copy(),
                "device_replay": self.device_replay.state_dict() if self.device_step is not None else None,
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
        if self.device_step is not None:
            self.device_step.sync_version()
            if state.get("device_replay") is not None:
                self.device_replay.load_state_dict(state["device_replay"])
            if self.sampled is not None:
                self.device_step.sampled[:len(self.sampled)].copy_(torch.from_numpy(self.sampled))
        self.publish()
        hot = state["hot_seconds"]
        self.sample_s, self.update_s, self.diag_s = hot["sample"], hot["update"], hot["diagnostics"]
        self.loss_sum = state["loss_sum"]
