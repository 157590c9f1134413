"""What a watcher of a long run wants beside the log's scalars, reported at the same log.

The practitioner was told to watch "Q-value distributions, loss curves, and the distribution of
experience sources in the buffer, to confirm that data from all workers is consumed". Run.log
reports throughput, loss, Q mean, policy lag and episode returns; this adds, at the same cadence
and only from numbers the main process already holds: env steps/s since learning started (the
report's speed measure), the realised updates per env step, Q's largest value and its
distribution in the latest batch, the policy lag's distribution, the replay's fill, and each
worker's share of the env steps (a starved or dead-slow worker shows as a share far below 1/N).
Distributions go to `histogram`, which only a curve writer keeps (core/event_files.py).
"""

from __future__ import annotations

from typing import Callable

import numpy as np


class Curves:
    """The extra curves of one run (see the module docstring)."""

    def __init__(self, cfg, reporter) -> None:
        self.cfg, self.reporter = cfg, reporter
        self._histogram = getattr(reporter, "histogram", None)
        self._rows: Callable[[], np.ndarray] | None = None
        self._learning_began: tuple[int, float] | None = None  # (env steps, training seconds) at the first log past learning_starts

    def watch_workers(self, rows: Callable[[], np.ndarray]) -> None:
        """`rows()` gives the workers' status rows (an `env_steps` field each): their shares are
        logged. Designs whose workers act (actor_learner, hogwild) call it once."""
        self._rows = rows

    def report(self, env_steps: int, seconds: float, learned, replay) -> None:
        """At a log: `seconds` of training so far, `learned` the LearningLog just reported,
        `replay` the run's replay buffer or None."""
        report = self.reporter.scalar
        if env_steps >= self.cfg.learning_starts:
            if self._learning_began is None:
                self._learning_began = (env_steps, seconds)
            steps, began = self._learning_began
            if seconds > began:
                report("learning_env_steps_per_sec", (env_steps - steps) / (seconds - began), env_steps)
            if learned is not None and env_steps > self.cfg.learning_starts:
                report("realised_utd", learned.updates / (env_steps - self.cfg.learning_starts), env_steps)
        if learned is not None and learned.q_taken is not None and not learned.q_taken.is_meta:  # plan's meta learner
            q = learned.q_taken.detach().float().cpu().numpy()  # the latest batch only: one small read per log
            report("q_max", float(q.max()), env_steps)
            self._hist("q_taken", q, env_steps)
        norm = learned.grad_norm if learned is not None else None
        if norm is not None and not norm.is_meta:
            report("grad_norm", float(norm), env_steps)  # one small read per log
        lags = getattr(learned.lag, "last_window", None) if learned is not None else None
        if lags is not None and len(lags):
            self._hist("policy_lag", lags, env_steps)
        if replay is not None:
            report("replay_fill", replay.size / replay.capacity, env_steps)
        if self._rows is not None:
            steps = np.asarray(self._rows()["env_steps"], dtype=np.float64)
            if steps.sum() > 0:
                shares = steps / steps.sum()
                report("worker_share_min", float(shares.min() * len(shares)), env_steps)  # 1.0: every worker even
                self._hist("worker_env_step_share", shares, env_steps)

    def _hist(self, name: str, values, env_steps: int) -> None:
        if self._histogram is not None:
            self._histogram(name, values, env_steps)
