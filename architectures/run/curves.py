"""What a watcher of a long run wants beside the log's scalars, reported at the same log.

The practitioner was told to watch "Q-value distributions, loss curves, and the distribution of
experience sources in the buffer, to confirm that data from all workers is consumed". Run.log
reports throughput, loss, Q mean, policy lag and episode returns; this adds, at the same cadence
and only from numbers the main process already holds: env steps/s since learning started (the
report's speed measure), the realised updates per env step, Q's largest value and its
distribution in the latest batch, the gradient norm, epsilon (each actor's, where they differ),
the policy lag's distribution, the replay's fill, each worker's share of the env steps and of the
sampled transitions (a starved or dead-slow worker shows as a share far below 1/N), the acting
weights' age at hand-off, and each role's busy fraction with the bound the breakdown names (the
same `name_bottleneck` the result's breakdown uses, on the seconds so far). Distributions go to
`histogram` and the bound to `text`, which only a curve writer keeps (core/event_files.py).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from architectures.core.diagnostics import name_bottleneck
from architectures.core.schedules import EpsilonSchedule
from architectures.run.acting import actor_epsilon

Roles = Callable[[], dict[str, dict[str, float]]]
"""role -> its seconds per component so far (`wait` is idle), as `name_bottleneck` reads them."""


class Curves:
    """The extra curves of one run (see the module docstring)."""

    def __init__(self, cfg, reporter) -> None:
        self.cfg, self.reporter = cfg, reporter
        self._histogram = getattr(reporter, "histogram", None)
        self._text = getattr(reporter, "text", None)
        self._rows: Callable[[], np.ndarray] | None = None
        self._run_steps = False  # whether the actors' epsilon follows the run's steps (free-running actors)
        self._handoff = None  # the acting weights' age at hand-off (a PolicyLag), where actors hand off
        self._roles: Roles | None = None
        self._bound: str | None = None  # the bound last written
        self._schedule = EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps)
        self._learning_began: tuple[int, float] | None = None  # (env steps, training seconds) at the first log past learning_starts

    def watch_workers(self, rows: Callable[[], np.ndarray], run_steps: bool = False) -> None:
        """`rows()` gives the workers' status rows (an `env_steps` field each): their shares and
        epsilons are logged (`run_steps`: an actor's epsilon follows the run's steps, as
        actor_learner's free-running actors' do). Designs whose workers act call it once."""
        self._rows, self._run_steps = rows, run_steps

    def watch_handoff(self, staleness) -> None:
        """`staleness`, a PolicyLag of the learner's version at hand-off minus the acting one: its
        window since the last log is logged as the acting weights' age."""
        self._handoff = staleness

    def watch_roles(self, roles: Roles) -> None:
        """`roles()` gives each role's seconds so far: busy fractions and the bound are logged."""
        self._roles = roles

    def report(self, env_steps: int, seconds: float, learned, learning) -> None:
        """At a log: `seconds` of training so far, `learned` the LearningLog just reported,
        `learning` the run's ReplayLearning or None."""
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
        if learning is not None:
            report("replay_fill", learning.replay.size / learning.replay.capacity, env_steps)
            sampled = learning.sampled_counts  # per source, where the replay has several
            if sampled is not None and len(sampled) > 1:
                self._shares("sampled", np.asarray(sampled, dtype=np.float64), env_steps)
        self._acting(env_steps)
        if self._handoff is not None:
            self._handoff.window()  # the ages since the last log
            ages = self._handoff.last_window
            if ages is not None and len(ages):
                report("acting_weight_age_mean", float(ages.mean()), env_steps)
                self._hist("acting_weight_age", ages, env_steps)
        if self._roles is not None and seconds > 0:
            self._busy(env_steps, seconds)

    def _acting(self, env_steps: int) -> None:
        """Epsilon (the mean over actors, and each actor's where they differ) and the env-step shares."""
        if self._rows is None:
            self.reporter.scalar("epsilon", self._schedule(env_steps), env_steps)
            return
        steps = np.asarray(self._rows()["env_steps"], dtype=np.int64)
        total = int(steps.sum())
        run_steps = (lambda: total) if self._run_steps else None
        epsilons = [actor_epsilon(self.cfg, i, run_steps)(int(own)) for i, own in enumerate(steps)]
        self.reporter.scalar("epsilon", float(np.mean(epsilons)), env_steps)
        if max(epsilons) - min(epsilons) > 0.01:  # Ape-X's fixed spread, or actors far apart in pace
            for i, epsilon in enumerate(epsilons):
                self.reporter.scalar(f"epsilon_actor{i}", epsilon, env_steps)
        if total > 0:
            self._shares("env_step", steps.astype(np.float64), env_steps)

    def _shares(self, what: str, counts: np.ndarray, env_steps: int) -> None:
        """Each worker's share of `counts`: the smallest times N (1.0: every worker even) and all."""
        if counts.sum() > 0:
            shares = counts / counts.sum()
            name = "worker_share_min" if what == "env_step" else f"worker_{what}_share_min"
            self.reporter.scalar(name, float(shares.min() * len(shares)), env_steps)
            self._hist(f"worker_{what}_share", shares, env_steps)

    def _busy(self, env_steps: int, seconds: float) -> None:
        """Each role's busy fraction so far, and the bound (written again only when it changes)."""
        bottleneck = name_bottleneck(seconds, self._roles())
        for role, busy in bottleneck["busy_fraction"].items():
            self.reporter.scalar(f"busy_{role}", busy, env_steps)
        bound = f"{bottleneck['role']}, mostly {bottleneck['component']}"
        if bound != self._bound and self._text is not None:
            self._text("bound", f"{bound} ({bottleneck['summary']})", env_steps)
        self._bound = bound

    def _hist(self, name: str, values, env_steps: int) -> None:
        if self._histogram is not None:
            self._histogram(name, values, env_steps)
