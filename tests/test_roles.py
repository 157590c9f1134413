"""actor_learner's roles over the in-process transport (designs/actor_learner/inprocess.py): the same
Actor, learner loop, weight publication, rate limiter and sync points as the shared-memory and Ray
transports, in one process and in about a second, so each rule is checked without processes."""

from __future__ import annotations

import os

import numpy as np
import pytest

from architectures.core.config import DQNConfig
from architectures.core.metrics import NullReporter
from architectures.designs.actor_learner import inprocess
from architectures.designs.actor_learner.actor import Actor, FaultyActor, make_actor
from architectures.transport.shared import STATUS_DTYPE


def cfg(**changes) -> DQNConfig:
    base = dict(env_id="CartPole-v1", seed=3, total_env_steps=6_000, hidden_sizes=(32,), buffer_size=6_000,
                batch_size=32, learning_starts=500, eps_decay_steps=2_000, eval_every=2_000, eval_episodes=2,
                target_update_period=50, log_every=1_000, num_workers=2, weight_sync_period=5, backend="inprocess")
    return DQNConfig(**{**base, **changes})


class Recorder(NullReporter):
    """Every scalar and holdout the run reports; stops the run (KeyboardInterrupt) at `stop_at` env steps."""

    def __init__(self, stop_at: int | None = None):
        self.scalars, self.holdouts, self.stop_at = [], [], stop_at

    def scalar(self, name, value, env_steps):
        self.scalars.append((name, env_steps, value))

    def holdout(self, result):
        self.holdouts.append((result["env_steps"], tuple(result["returns"])))
        if self.stop_at is not None and result["env_steps"] >= self.stop_at:
            raise KeyboardInterrupt


def test_the_roles_hold_the_rate_the_sync_points_and_the_shares_in_one_process():
    result = inprocess.train(cfg())
    assert result["env_steps"] == 6_000 and result["backend"] == "inprocess"
    assert [c["env_steps"] for c in result["holdout_curve"]] == [2_000, 4_000, 6_000]  # exact sync points
    assert result["updates"] == (6_000 - 500) // 4                                        # utd 0.25 after learning_starts
    assert result["worker_shares"]["env_steps"] == [0.5, 0.5]                            # equal quotas
    assert result["weight_publishes"] == result["updates"] // 5                          # every 5 updates, never refused
    assert 0 <= result["acting_staleness"]["mean"] < 5 + 16                              # at most a period and a turn old


def test_free_quotas_still_meet_every_sync_point_exactly():
    result = inprocess.train(cfg(actor_quotas="free", num_workers=3, total_env_steps=3_000, eval_every=1_000))
    assert [c["env_steps"] for c in result["holdout_curve"]] == [1_000, 2_000, 3_000]
    assert result["env_steps"] == 3_000


def test_one_seed_gives_the_same_run_every_time():
    first, second = Recorder(), Recorder()
    inprocess.train(cfg(total_env_steps=3_000, eval_every=1_000), first)
    inprocess.train(cfg(total_env_steps=3_000, eval_every=1_000), second)
    timeless = [(name, step, value) for name, step, value in first.scalars if name in ("td_loss", "q_mean")]
    assert first.holdouts == second.holdouts and timeless
    assert timeless == [(name, step, value) for name, step, value in second.scalars if name in ("td_loss", "q_mean")]


def test_a_run_stopped_at_a_sync_point_resumes_to_the_same_grid(tmp_path):
    path = str(tmp_path / "run.pt")
    with pytest.raises(KeyboardInterrupt):  # stopped in the 4,000 holdout, before that stop's save
        inprocess.train(cfg(checkpoint_path=path, checkpoint_every=2_000), Recorder(stop_at=4_000))
    assert os.path.exists(path)
    result = inprocess.train(cfg(checkpoint_path=path, checkpoint_every=2_000))
    assert result["resumed_from_env_steps"] == 2_000 and result["env_steps"] == 6_000
    assert [c["env_steps"] for c in result["holdout_curve"]] == [2_000, 4_000, 6_000]
    assert result["updates"] == (6_000 - 500) // 4 and not os.path.exists(path)


def test_a_frozen_actor_starves_and_fails_the_run_by_the_watchdog():
    """FaultyActor's freeze_weights: the actor stops taking new weights; the learner's watchdog says so."""
    from architectures.transport.workers import WorkerFailed

    original = inprocess.make_actor

    def frozen_first(*args, **kwargs):
        return original(*args, fault=("freeze_weights", 1_000), **kwargs) if args[1] == 0 else original(*args, **kwargs)

    inprocess.make_actor = frozen_first
    try:
        with pytest.raises(WorkerFailed, match="stopped receiving weights"):
            inprocess.train(cfg(total_env_steps=8_000, eval_every=4_000))
    finally:
        inprocess.make_actor = original


def test_the_run_builds_a_plain_actor_unless_a_fault_is_asked_for():
    """The fault check lives in a subclass: the actor a run normally builds has none on its path."""
    row = np.zeros((), STATUS_DTYPE)
    plain = make_actor(cfg(), 0, row, lambda params: _NoWeights(), lambda: 0)
    faulty = make_actor(cfg(), 0, row, lambda params: _NoWeights(), lambda: 0, fault=("crash", 5))
    assert type(plain) is Actor and isinstance(faulty, FaultyActor)
    for _ in range(5):
        faulty.step()
    with pytest.raises(RuntimeError, match="injected crash"):
        faulty.step()
    plain.close()
    faulty.close()


class _NoWeights:
    version = 0

    def update(self):
        return None
