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
