"""The rate limiter: how far the learner's updates and the actors' inserts may run apart.

Acme's `SampleToInsertRatio` for DQN's counts. Inserts are env steps (every design counts its
replay's inputs in env steps), samples are updates (one minibatch each): after `learning_starts`
env steps the learner owes `utd` updates per env step, counted exactly (core.schedules.UpdateRatio).
Two sides read the same two counts:

- the learner may update while it owes updates (`can_sample`): ahead of the data, it waits;
- an actor may insert while the learner owes at most `slack_updates` (`can_insert`), that is
  `utd_slack_steps` env steps' worth: behind, the actors wait, so the realised ratio holds to
  `utd` however fast the actors are.

A design that steps and learns in one loop (single_env, high_utd, vector_env) needs only the
learner's side. The limiter keeps no state beyond its settings: the counts live where each
transport keeps them (a shared-memory flag, the learner's own version), so the actors' copy
and the learner's agree by construction and nothing needs saving on resume.
"""

from __future__ import annotations

from architectures.core.config import DQNConfig
from architectures.core.schedules import UpdateRatio


class RateLimiter:
    """Updates per inserted env step, and the slack an actor may run ahead (see the module docstring)."""

    def __init__(self, utd: float, learning_starts: int, slack_steps: int = 0):
        self.ratio = UpdateRatio(utd, learning_starts)
        self.slack_updates = int(slack_steps * self.ratio.ratio)
        """Updates the learner may owe before the actors wait: `slack_steps` env steps' worth."""

    @classmethod
    def from_config(cls, cfg: DQNConfig) -> "RateLimiter":
        return cls(cfg.utd, cfg.learning_starts, cfg.utd_slack_steps)

    def owed(self, inserts: int, updates: int) -> int:
        """Updates due after `inserts` env steps, less the `updates` done (negative: the learner is ahead)."""
        return self.ratio.target_updates(inserts) - updates

    def can_sample(self, inserts: int, updates: int) -> bool:
        """The learner may do another update."""
        return self.owed(inserts, updates) > 0

    def can_insert(self, inserts: int, updates: int) -> bool:
        """An actor may step on: the learner owes no more than the slack."""
        return self.owed(inserts, updates) <= self.slack_updates

    def realised(self, updates: int, inserts: int) -> float:
        """Updates per env step achieved, counted over the steps after learning_starts."""
        return self.ratio.realised(updates, inserts)
