"""Schedules: epsilon over env steps, and updates owed per env step (utd), in exact arithmetic."""

from __future__ import annotations

from fractions import Fraction


class EpsilonSchedule:
    """Linear decay from eps_start to eps_end over eps_decay_steps env steps, then flat."""

    def __init__(self, start: float, end: float, decay_steps: int):
        self.start, self.end, self.decay_steps = start, end, decay_steps

    def __call__(self, env_step: int) -> float:
        if self.decay_steps == 0 or env_step >= self.decay_steps:
            return self.end
        return self.start + (self.end - self.start) * (env_step / self.decay_steps)


class UpdateRatio:
    """Paces updates to `utd` per env step after `learning_starts`, in exact integer arithmetic.

    updates_owed(env_steps) = floor((env_steps - learning_starts) * utd) - updates_done, with utd
    held as a fraction (0.25 -> 1/4), so no float drift over 40M steps.
    """

    def __init__(self, utd: float, learning_starts: int):
        self.ratio = Fraction(str(utd)).limit_denominator(10_000)
        self.learning_starts = learning_starts

    def target_updates(self, env_steps: int) -> int:
        """Total updates that should have happened after `env_steps` env steps."""
        past = env_steps - self.learning_starts
        if past < 0:
            return 0
        return past * self.ratio.numerator // self.ratio.denominator

    def realised(self, updates: int, env_steps: int) -> float:
        """Achieved updates per env step, counted over the steps after learning_starts."""
        past = env_steps - self.learning_starts
        return updates / past if past > 0 else 0.0


class WorkerShare(UpdateRatio):
    """Worker `index` of `workers`' share of a run's updates when each worker learns by its own step
    count (hogwild). Its own step s stands for the run's env step (s - 1) * workers + index + 1 (the
    steps dealt in turn, as the sync-point quotas deal them: run.sync_points.worker_quota), and it owes its
    share (updates dealt in turn too) of what the run's UpdateRatio makes due by then; at its quota of
    a sync point (`stops`, the run's env steps there) it owes its share of the point's own target,
    so there the workers' updates add up to the run's exactly
    (tests/test_hogwild.py::test_the_workers_updates_add_up_to_the_runs_exactly). Each worker
    flooring its own share, as before, lost up to workers - 1 updates (1,124 of 1,125)."""

    def __init__(self, utd: float, learning_starts: int, workers: int, index: int, stops: list[int]):
        super().__init__(utd, learning_starts)
        self.workers, self.index = workers, index
        self.at_stop = {self._quota(stop): stop for stop in sorted(stops)}  # own steps -> the run's there

    def _quota(self, total: int) -> int:
        """This worker's share of `total` dealt in turn (run.sync_points.worker_quota's rule)."""
        return total // self.workers + (self.index < total % self.workers)

    def target_updates(self, env_steps: int) -> int:
        """Updates this worker owes after `env_steps` steps of its own."""
        run_steps = self.at_stop.get(env_steps, max(0, (env_steps - 1) * self.workers + self.index + 1))
        return self._quota(super().target_updates(run_steps))
