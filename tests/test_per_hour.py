"""The per-hour family (analysis/report/answer/per_hour.py): returns read at training seconds from each
run's own checkpoints, the window no longer than the shortest run, comparisons with Holm's p."""

import numpy as np
import pytest

from analysis.io.load import load_runs
from analysis.report.answer import per_hour
from tests.synthetic_runs import write_run


def _run(store, arch, n, seed, seconds, steps, returns):
    write_run(str(store), f"per_hour-{arch}{n}s{seed}",
              config={"architecture": arch, "num_workers": n, "seed": seed, "env_id": "MinAtar/Breakout-v1",
                      "env_step_wait_us": 2000.0},
              result={"env_steps": steps[-1], "env_steps_per_sec": steps[-1] / seconds[-1],
                      "train_seconds": seconds[-1], "final_holdout_return": returns[-1],
                      "holdout_curve": [{"env_steps": s, "return_mean": r} for s, r in zip(steps, returns)],
                      "checkpoint_train_seconds": seconds})


def test_returns_at_equal_seconds_and_steps_with_holm_corrected_rank_tests(tmp_path):
    store = tmp_path / "runs"
    for i, seed in enumerate((101, 102, 103, 104, 105)):
        # single_env: 10 checkpoints over 100 s, 4,500 env steps apart, returns 1 + seed offset
        _run(store, "single_env", 1, seed, [10.0 * k for k in range(1, 11)], [4_500 * k for k in range(1, 11)],
             [1.0 + 0.1 * i] * 10)
        # actor_learner: faster, better per second, ends later (110 s): the window stops at 100 s
        _run(store, "actor_learner", 16, seed, [11.0 * k for k in range(1, 11)], [37_500 * k for k in range(1, 11)],
             [2.0 + k + 0.1 * i for k in range(10)])
    notes = []
    made = per_hour.data(load_runs([str(store)]), notes.append)
    assert not notes and made.parts["window"] == pytest.approx(100.0)
    numbers = {name: value for name, value, _ in made.numbers}
    # at 100 s, actor_learner's last checkpoint reached is its 9th (99 s): return 2 + 8 + 0.1 i
    assert numbers["PerHourActorLearnerIqm"] == pytest.approx(10.2)
    assert numbers["PerHourActorLearnerImprove"] == 1.0
    assert numbers["PerHourActorLearnerHolm"] == pytest.approx(2 / 252)  # exact, 5 vs 5, one comparison
    # at about equal env steps (single_env's last, 45,000): actor_learner's first checkpoint, 37,500
    assert numbers["PerHourActorLearnerStepsIqm"] == pytest.approx(2.2)
    assert numbers["PerHourSingleEnvSteps"] == 45_000
    [(name, table, _)] = made.tables
    assert name == "per_hour" and len(table) == 2
    curve = made.parts["curve"]
    assert np.isfinite(curve["iqm"]).all() and len(curve) == 2 * per_hour.GRID
