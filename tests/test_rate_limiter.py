"""The rate limiter on its own, in-process: milliseconds, no worker, no shared memory."""

import math
import random

import pytest

from architectures.core.config import DQNConfig
from architectures.core.rate_limiter import RateLimiter


def test_the_learner_may_sample_only_what_the_inserts_owe_it():
    limiter = RateLimiter(utd=0.25, learning_starts=100)
    assert not limiter.can_sample(100, 0)  # nothing owed before learning starts
    assert limiter.owed(104, 0) == 1 and limiter.can_sample(104, 0) and not limiter.can_sample(104, 1)
    assert limiter.owed(500, 50) == 50  # (500 - 100) / 4 - 50


def test_an_actor_may_insert_while_the_learner_owes_at_most_the_slack():
    limiter = RateLimiter(utd=0.25, learning_starts=0, slack_steps=400)
    assert limiter.slack_updates == 100
    assert limiter.can_insert(400, 0) and not limiter.can_insert(404, 0)  # 101 owed: the actors wait
    assert limiter.can_insert(404, 1)  # one update later they go on
    assert not RateLimiter(utd=1.0, learning_starts=0).can_insert(1, 0)  # no slack: lockstep


def test_its_settings_are_the_configs():
    limiter = RateLimiter.from_config(DQNConfig(utd=0.5, learning_starts=300, utd_slack_steps=64))
    assert (limiter.ratio.learning_starts, limiter.slack_updates) == (300, 32)


@pytest.mark.parametrize("utd, slack_steps", [(0.25, 0), (0.25, 512), (2.0, 64), (1 / 3, 300)])
def test_actors_and_a_learner_it_paces_hold_the_ratio_whatever_their_speeds(utd, slack_steps):
    """Actors offered far more steps than the learner can take, then the other way round: the learner
    never owes more than the slack (plus one actor's step), and never samples what is not owed."""
    limiter, rng = RateLimiter(utd, learning_starts=200, slack_steps=slack_steps), random.Random(0)
    inserts = updates = 0
    for turn in range(3_000):
        fast_actors = turn < 1_500
        for _ in range(rng.randint(1, 8) if fast_actors else 1):  # an actor steps 16 at a time
            if limiter.can_insert(inserts, updates):
                inserts += 16
        for _ in range(1 if fast_actors else rng.randint(1, 40)):
            if limiter.can_sample(inserts, updates):
                updates += 1
        assert limiter.owed(inserts, updates) <= limiter.slack_updates + math.ceil(16 * utd)
        assert limiter.owed(inserts, updates) >= 0
    assert limiter.realised(updates, inserts) == pytest.approx(utd, rel=0.1)
