"""actor_learner's learner loop, written once for every transport (as Sample Factory's runners drive the
same components whichever way the data moves): hand-off, then the updates the rate limiter owes, or, once
every actor has stopped at the run's next sync point, its evaluation and save, or else a blocking wait.

A transport (`Transport`) moves the transitions and knows where the actors are: shared memory
(local.py: actor processes and rings), Ray (ray_backend.py: requested batches) or in-process
(inprocess.py: the actors stepped by this loop). The loop's order is what keeps every holdout exact:
owed updates are caught up before a stop's evaluation, and a stop is made only when every actor is
there and everything they sent has been handed off.
"""

from __future__ import annotations

import time
from typing import Protocol

from architectures.designs.actor_learner.actor_stats import ActorStats
from architectures.run.base import Run
from architectures.run.learning import ReplayLearning
from architectures.run.worker_rows import status_episodes

LEARN_BETWEEN_HANDOFFS = 8
"""Owed updates done before the next hand-off, so the actors' queues never fill while the learner catches up."""


class Transport(Protocol):
    """How actor_learner's data moves between its actors and its learner."""

    def exchange(self) -> int:
        """Hand what the actors delivered to the learner's replay (and ask for more where the transport
        pulls); the env steps delivered so far."""
        ...

    def at_sync_point(self, env_steps: int) -> bool:
        """Every actor stands at the run's next sync point and all it sent is handed off."""
        ...

    def release(self) -> None:
        """Let the actors go on past the sync point just made."""
        ...

    def wait(self) -> float:
        """Block, without polling, until the learner may learn or an actor reached the sync point;
        the seconds waited."""
        ...

    def health(self) -> None:
        """At most every HEALTH_S: a lost, hung or weight-starved actor fails or is replaced."""
        ...


def learn(run: Run, learning: ReplayLearning, transport: Transport, actor_stats: ActorStats) -> int:
    """The learner's loop until the run's last sync point; the env steps learned from."""
    learner, status = learning.learner, actor_stats.status
    while True:
        env_steps = transport.exchange()
        if learning.owed(env_steps) > 0 and learning.replay.size > 0:
            learning.learn_owed(env_steps, limit=LEARN_BETWEEN_HANDOFFS)
        elif transport.at_sync_point(env_steps):  # evaluation and/or checkpoint, the actors standing still
            if run.at_stop(env_steps):  # a save collects the actors' states (ActorStats.collect)
                return env_steps
            transport.release()
        else:  # the learner is ahead of the data
            actor_stats.tally.wait_seconds += transport.wait()
            actor_stats.tally.waits += 1
        transport.health()
        if run.log_due(env_steps):
            run.log(env_steps, status_episodes(status),
                    actor_weights_staleness_max=float(learner.version - status["weights_version"].min()))


class Throttle:
    """True at most once every `seconds`: the health check's cadence, waiting or not."""

    def __init__(self, seconds: float = 0.2):
        self.seconds, self.last = seconds, time.monotonic()

    def __call__(self) -> bool:
        if time.monotonic() - self.last <= self.seconds:
            return False
        self.last = time.monotonic()
        return True
