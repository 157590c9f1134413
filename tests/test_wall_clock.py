"""The per-wall-clock composition (analysis/report/answer/wall_clock.py) on known curves and rates."""

import numpy as np
import pytest

from analysis.report.answer import wall_clock


def test_composition_reads_the_curve_at_rate_times_seconds():
    """Two straight curves (return = env steps / 100 and / 50) at a single rate of 1,000 env steps/s:
    after 10 s both are at 10k env steps, returns 100 and 200, mean 150; held flat past the last checkpoint."""
    steps = np.array([5_000.0, 10_000.0, 20_000.0])
    curves = [(steps, steps / 100), (steps, steps / 50)]
    point, low, high = wall_clock.compose(curves, [1_000.0], [10.0, 15.0, 60.0], draws=200)
    assert point == pytest.approx([150.0, 225.0, 300.0])
    assert np.all(low <= point) and np.all(point <= high)
    assert low[0] == pytest.approx(100.0) and high[0] == pytest.approx(200.0)  # one seed's curve, or the other's


def test_a_slower_rate_reads_the_curve_earlier_and_the_interval_carries_the_rates_spread():
    steps = np.array([10_000.0, 20_000.0, 40_000.0])
    curves = [(steps, steps / 100)] * 3
    fast, _, _ = wall_clock.compose(curves, [2_000.0], [10.0], draws=100)
    slow, _, _ = wall_clock.compose(curves, [1_000.0], [10.0], draws=100)
    assert fast[0] == pytest.approx(200.0) and slow[0] == pytest.approx(100.0)
    point, low, high = wall_clock.compose(curves, [1_000.0, 1_500.0, 2_000.0], [10.0], draws=500)
    assert point[0] == pytest.approx(150.0) and low[0] == pytest.approx(100.0) and high[0] == pytest.approx(200.0)


def test_time_to_a_threshold_is_steps_over_rate_and_censored_at_the_budget():
    curve = (np.array([10_000.0, 20_000.0, 30_000.0]), np.array([100.0, 480.0, 500.0]))
    assert wall_clock.steps_to(curve, 475.0) == 20_000.0
    assert wall_clock.steps_to(curve, 501.0) == float("inf")
    point, low, high = wall_clock.time_to(np.array([20_000.0] * 5), np.array([1_000.0] * 4), draws=100)
    assert (point, low, high) == (20.0, 20.0, 20.0)
    never = wall_clock.time_to(np.array([20_000.0, np.inf, np.inf]), np.array([1_000.0, 1_100.0]), draws=200)
    assert never[0] == float("inf") and never[2] == float("inf")  # most seeds never reached it


def test_the_composition_refuses_nothing_to_compose():
    with pytest.raises(ValueError, match="at least one curve and one rate"):
        wall_clock.compose([], [1.0], [1.0])


def test_the_check_is_counted_only_with_five_curve_seeds_and_steady_rates():
    """As pre-registered: no interim count; one note names what is missing."""
    import pandas as pd

    from analysis.report.answer import wall_clock

    ready = pd.DataFrame([{"design": "single_env", "curve seeds": 5, "rate seconds": 75.0},
                          {"design": "hogwild", "curve seeds": 5, "rate seconds": 61.0}])
    notes = []
    assert wall_clock._complete(ready, notes.append) and notes == []
    partial = ready.assign(**{"curve seeds": [5, 2], "rate seconds": [75.0, 7.0]})
    assert not wall_clock._complete(partial, notes.append)
    assert "hogwild (2 of 5 curve seeds); hogwild (rate runs of 7 s)" in notes[0]
