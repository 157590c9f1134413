"""The rate limiter: how far the learner's updates and the actors' inserts may run apart.

Acme's `SampleToInsertRatio` for DQN's counts. Inserts are env steps (every design counts its
replay's inputs in env steps), samples are updates (one minibatch each): after `learning_starts`
env steps the learner owes `utd` updates per env step, counted exactly (core.schedules.UpdateRatio).
Two sides read the same two counts:

- the learner may update while it owes updates (`can_sample`): ahead of the data, it waits;
- an actor may insert while the learner owes at most `slack_updates` (`can_insert`), that is
  `utd_slack_steps` env steps' worth: behind, the actors wait, so the realised ratio holds to
  `utd` however fast the actors are.

Every design that paces updates to env steps uses it: actor_learner's learner and actors (each
transport reads the counts where it keeps them), hogwild's workers (`for_worker`: each worker's own
share, WorkerShare, so their updates add up to the run's at every sync point), vector_env
(`for_vector_env`: its one process acts and learns, so it keeps its learning within one vector step
rather than `utd_slack_steps`; more slack would only let the acting weights age), and single_env and
high_utd through ReplayLearning (the learner's side only). pqn has no replay and so no limiter: it
learns each rollout once, `rollout_epochs` x `rollout_minibatches` updates a rollout (designs/pqn.py).
The limiter keeps no state beyond its settings: the counts live where each transport keeps them (a
shared-memory flag, the learner's own version), so the actors' copy and the learner's agree by
construction and nothing needs saving on resume.
"""

from __future__ import annotations

import math

from architectures.core.config import DQNConfig
from architectures.core.schedules import UpdateRatio, WorkerShare


class RateLimiter:
    """Updates per inserted env step, and the slack an actor may run ahead (see the module docstring)."""

    def __init__(self, utd: float = 0.25, learning_starts: int = 0, slack_steps: int = 0, *,
                 ratio: UpdateRatio | None = None, slack_updates: int | None = None):
        self.ratio = ratio if ratio is not None else UpdateRatio(utd, learning_starts)
        self.slack_updates = slack_updates if slack_updates is not None else int(slack_steps * self.ratio.ratio)
        """Updates the learner may owe before the actors wait: `slack_steps` env steps' worth."""

    @classmethod
    def from_config(cls, cfg: DQNConfig) -> "RateLimiter":
        """The run's: utd after learning_starts, `utd_slack_steps` of slack for the actors."""
        return cls(cfg.utd, cfg.learning_starts, cfg.utd_slack_steps)

    @classmethod
    def for_worker(cls, cfg: DQNConfig, index: int, stops: list[int]) -> "RateLimiter":
        """A hogwild worker's: its share of the run's updates by its own env steps (WorkerShare); it
        acts and learns in turn, so only its learning side is read."""
        return cls(ratio=WorkerShare(cfg.utd, cfg.learning_starts, cfg.num_workers, index, stops), slack_updates=0)

    @classmethod
    def for_vector_env(cls, cfg: DQNConfig) -> "RateLimiter":
        """vector_env's: envs are sent on while learning owes at most one vector step's updates."""
        return cls(cfg.utd, cfg.learning_starts, slack_updates=max(1, math.ceil(cfg.num_workers * cfg.utd)))

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
