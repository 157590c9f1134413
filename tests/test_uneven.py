"""Uneven workers: one slow worker among fast ones (`slow_worker_cost_us`), and actor_learner's
two answers to it (`actor_quotas`): equal shares at every sync point, or free-running
actors as in Ape-X. The run's totals stay exact either way; what changes is who contributes."""

import pytest

from architectures.designs import hogwild, vector_env
from architectures.designs.actor_learner import local as actor_learner
from architectures.run.acting import worker_env_cost
from tests.test_actor_learner import assert_clean, small_cfg

SLOW = dict(total_env_steps=3_000, eval_every=1_500, slow_worker_cost_us=1_500.0)
"""Half of the steps at 1.5 ms is 2.25 s a run: long enough to tell a held run from a free one."""


def test_only_worker_zero_is_slowed_and_only_among_several():
    cfg = small_cfg(env_step_cost_us=100.0, slow_worker_cost_us=1_000.0)
    assert [worker_env_cost(cfg, i) for i in range(2)] == [1_100.0, 100.0]
    assert worker_env_cost(cfg.replace(num_workers=1), 0) == 100.0  # single_env ignores it


@pytest.mark.slow
@pytest.mark.parametrize("quotas", ["equal", "free"])
def test_totals_stay_exact_whoever_steps(quotas):
    r = actor_learner.train(small_cfg(**SLOW, actor_quotas=quotas))
    assert r["env_steps"] == 3_000 and r["updates"] == (3_000 - 500) // 4
    assert [c["env_steps"] for c in r["holdout_curve"]] == [1_500, 3_000]
    assert r["actor_quotas"] == quotas and len(r["worker_acting_staleness_mean"]) == 2
    shares = r["worker_shares"]["env_steps"]
    if quotas == "equal":  # the fast actor waits for the slow one at every sync point
        assert shares == [0.5, 0.5]
    else:  # the fast actor (1) steps far more than the slow one (0): ~16 us against ~1.5 ms a step
        assert shares[1] > 2 * shares[0]
        assert r["worker_shares"]["replay"][1] > 2 * r["worker_shares"]["replay"][0]
        assert r["worker_shares"]["sampled"][1] > 2 * r["worker_shares"]["sampled"][0]
    assert_clean()


@pytest.mark.slow
def test_a_slow_env_holds_back_no_other_env_and_a_slow_hogwild_worker_its_share():
    v = vector_env.train(small_cfg(**SLOW))
    h = hogwild.train(small_cfg(**SLOW))
    for r in (v, h):
        assert r["env_steps"] == 3_000 and r["updates"] > 0
    # vector_env acts on whichever env has answered: the fast env steps on while
    # the slow one steps, as free-running actors do, and the run's totals stay exact ...
    shares = v["worker_shares"]["env_steps"]
    assert shares[1] > 2 * shares[0] and [c["env_steps"] for c in v["holdout_curve"]] == [1_500, 3_000]
    # ... while hogwild's run lasts until its slow worker has stepped its half: 1,500 slow steps' time.
    assert h["worker_shares"]["env_steps"] == [0.5, 0.5] and h["train_seconds"] >= 1_500 * 1.5e-3
    assert_clean()
