"""analysis/stats.py on known data: exact aggregates, bootstrap coverage, seeded reproducibility,
and agreement with rliable's reference values (tests/fixtures/rliable_reference.json)."""

import json
import os

import numpy as np
import pytest
from scipy import stats as scipy_stats

from analysis import stats

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "rliable_reference.json")


@pytest.mark.parametrize("scores, expected", [
    (np.arange(1, 21), np.mean(np.arange(6, 16))),            # 20 scores: 5 cut from each end
    ([1, 2, 3, 4], 2.5),                                        # the middle two
    ([[1, 10], [2, 20], [3, 30], [4, 40]], np.mean([3, 4, 10, 20])),  # runs x tasks, flattened
    ([7.0], 7.0),
    ([1, 2, 3], 2.0),                                           # floor(0.75) = 0 cut: the mean
])
def test_iqm_of_known_arrays(scores, expected):
    assert stats.iqm(scores) == pytest.approx(expected)


def test_mean_and_median():
    assert stats.mean([1, 2, 3, 10]) == 4.0
    assert stats.median([1, 2, 3, 10]) == 2.5


def test_interval_is_seeded_and_reproducible():
    data = np.random.default_rng(0).normal(size=(10, 2))
    first = stats.interval(data, "iqm", seed=3)
    assert stats.interval(data, "iqm", seed=3) == first
    assert stats.interval(data, "iqm", seed=4) != first
    point, low, high = first
    assert low < point < high


def test_single_run_has_no_interval():
    point, low, high = stats.interval([5.0], "mean")
    assert point == 5.0 and np.isnan(low) and np.isnan(high)


def test_bootstrap_interval_covers_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(123)
    trials, covered = 300, 0
    for trial in range(trials):
        sample = rng.normal(loc=2.0, scale=1.0, size=40)
        _, low, high = stats.interval(sample, "mean", reps=1_000, seed=trial)
        covered += low <= 2.0 <= high
    # Percentile intervals undercover slightly at n = 40 (~93-94%); a broken interval lands far away.
    assert 0.88 <= covered / trials <= 0.99


def test_stratified_bootstrap_resamples_within_each_task():
    # Task 0 always scores 0, task 1 always 100: any resample keeps one of each per row,
    # so the mean never moves; an unstratified resample would.
    scores = np.array([[0.0, 100.0]] * 6)
    _, low, high = stats.interval(scores, "mean", reps=500)
    assert low == high == 50.0


@pytest.mark.parametrize("x, y, expected", [
    ([5, 6, 7], [1, 2, 3], 1.0),
    ([1, 2, 3], [5, 6, 7], 0.0),
    ([1, 2, 3], [1, 2, 3], 0.5),     # ties count one half
    ([2, 2], [2, 2], 0.5),
    ([1, 4], [2, 3], 0.5),
])
def test_probability_of_improvement_on_known_pairs(x, y, expected):
    assert stats.probability_of_improvement(x, y) == pytest.approx(expected)


def test_probability_of_improvement_interval_brackets_the_point():
    rng = np.random.default_rng(1)
    x, y = rng.normal(1.0, 1.0, 10), rng.normal(0.0, 1.0, 10)
    point, low, high = stats.probability_of_improvement_interval(x, y)
    assert 0 <= low <= point <= high <= 1
    assert stats.probability_of_improvement_interval(x, y) == (point, low, high)


def test_bad_shapes_are_named():
    with pytest.raises(ValueError, match="non-empty"):
        stats.iqm([])
    with pytest.raises(ValueError, match="different numbers of tasks"):
        stats.probability_of_improvement(np.zeros((3, 2)), np.zeros((3, 1)))


@pytest.fixture(scope="module")
def reference():
    if not os.path.exists(FIXTURE):
        pytest.skip("tests/fixtures/rliable_reference.json missing (tests/fixtures/make_rliable_reference.py makes it)")
    with open(FIXTURE) as f:
        return json.load(f)


def test_iqm_matches_rliable_on_fixed_arrays(reference):
    for name, case in reference["iqm_fixed_arrays"].items():
        assert stats.iqm(case["scores"]) == pytest.approx(case["iqm"], abs=1e-12), name


def test_probability_of_improvement_matches_rliable_on_ties_and_unequal_runs(reference):
    for name, case in reference["probability_of_improvement_fixed"].items():
        assert stats.probability_of_improvement(case["x"], case["y"]) == pytest.approx(case["x_over_y"]), name
        assert stats.probability_of_improvement(case["y"], case["x"]) == pytest.approx(case["y_over_x"]), name


@pytest.mark.parametrize("case, tolerance", [("main", 0.005), ("small", 0.005)])
def test_intervals_match_rliable_within_bootstrap_noise(reference, case, tolerance):
    """Points exactly; interval endpoints within `tolerance` (scores lie in [0, 1]): both sides
    draw 50,000 stratified resamples, from different random streams."""
    data = reference["data"][case]
    expected = reference["cases"][case]
    reps = reference["bootstrap"].get("reps", 50_000)
    # rliable's median is the median of per-task means; ours is the median of the run scores
    # (what a per-seed throughput needs), so only IQM and mean are compared.
    for algorithm in ("A", "B"):
        for aggregate in ("iqm", "mean"):
            want = expected["aggregates"][algorithm][aggregate]
            point, low, high = stats.interval(data[algorithm], aggregate, reps=reps)
            assert point == pytest.approx(want["point"], abs=1e-12), (algorithm, aggregate)
            assert low == pytest.approx(want["ci95"][0], abs=tolerance), (algorithm, aggregate, "low")
            assert high == pytest.approx(want["ci95"][1], abs=tolerance), (algorithm, aggregate, "high")
    want = expected["probability_of_improvement"]["A_over_B"]
    point, low, high = stats.probability_of_improvement_interval(data["A"], data["B"], reps=reps)
    assert point == pytest.approx(want["point"], abs=1e-12)
    assert (low, high) == pytest.approx(tuple(want["ci95"]), abs=2 * tolerance)


@pytest.mark.parametrize("x, y, expected, collapses", [
    ([5, 6, 7, 8, 9], [0, 1, 2, 3, 4], 2 / 252, True),   # all 25 pairs one way: 2 / C(10, 5), exact
    ([0, 1, 2, 3, 4], [5, 6, 7, 8, 9], 2 / 252, True),   # two-sided: the other way is as rare
    ([101, 103], [21, 23], 2 / 6, True),                 # 2 seeds a side can never say much
    ([1, 3, 5], [2, 4, 6], 0.7, False),                  # interleaved: nothing to see (exact, 14 / 20)
    ([478, 500, 491, 500, 500], [237, 273, 371, 309, 216], 2 / 252, True),  # ties at the cap stay exact
    ([1, 1, 5], [1, 4, 6], 0.7, False),                  # a tie across the sides counts half
])
def test_the_rank_test_says_how_rare_an_ordered_sample_is(x, y, expected, collapses):
    """Where the bootstrap interval of P(X > Y) collapses to a point, the rank test's p does not."""
    assert stats.rank_test_p(x, y) == pytest.approx(expected)
    _, low, high = stats.probability_of_improvement_interval(x, y)
    assert (low == high) is collapses


def test_the_exact_rank_test_counts_what_scipys_permutation_test_enumerates():
    """The counted p (stats._exact_p) is scipy's enumerated one to the bit, ties included, so
    the committed report's p-values did not move when the enumeration went."""
    rng = np.random.default_rng(5)
    for case in range(24):
        n, m = (int(k) for k in rng.integers(2, 7, size=2))
        if case % 2:  # few distinct values: ties within and across the sides
            x, y = rng.integers(0, 3, size=n).astype(float), rng.integers(0, 3, size=m).astype(float)
        else:
            x, y = rng.normal(size=n), rng.normal(size=m) + rng.normal()
        expected = scipy_stats.permutation_test((x, y), stats._u, permutation_type="independent", vectorized=True,
                                                n_resamples=np.inf, alternative="two-sided").pvalue
        assert stats.rank_test_p(x, y) == float(expected), (x, y)


def test_the_rank_test_refuses_an_empty_side():
    with pytest.raises(ValueError, match="at least one score on each side"):
        stats.rank_test_p([], [1.0])


def test_the_rank_test_falls_back_to_the_normal_approximation_above_its_exact_limit():
    x, y = np.arange(11.0) + 0.5, np.arange(11.0)   # C(22, 11) = 705,432 splits: too many to enumerate
    assert stats.rank_test_p(x, y) == pytest.approx(
        scipy_stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic").pvalue)


def test_holm_adjusts_as_the_step_down_procedure_does():
    from analysis.stats import holm

    # m = 3: the smallest x3, the next x2 (kept at least the one before), the largest x1.
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([0.02]) == pytest.approx([0.02])  # one comparison: as it was


@pytest.mark.parametrize("x, y, expected", [([1.0], [2.0], 1.0), ([1.0], [2.0, 3.0, 4.0], 0.5),
                                            ([5.0], [2.0, 3.0, 4.0], 0.5), ([3.0], [2.0, 3.0, 4.0], 1.0)])
def test_the_rank_test_enumerates_a_side_of_one(x, y, expected):
    """One run a side (a design measured once) still gets an exact p: the splits are enumerated."""
    assert stats.rank_test_p(x, y) == pytest.approx(expected)


def test_the_stratified_rank_test_finds_a_shift_every_task_shares():
    """Five games, five seeds a side: a shift every game shares is rare under relabelling within
    games even where no one game's rank test could reach 0.05 after correcting; on one task the
    test agrees with the exact rank test; no shift gives a large p; a different number of tasks
    is refused."""
    rng = np.random.default_rng(3)
    base = rng.normal(0.0, 1.0, (5, 5)) * np.array([1, 10, 100, 3, 0.1])  # games on their own scales
    shifted = base + 2.0 * np.array([1, 10, 100, 3, 0.1])
    assert stats.stratified_rank_test_p(shifted, base) < 0.001
    assert stats.stratified_rank_test_p(base, base[::-1]) > 0.5
    one_x, one_y = shifted[:, :1] + rng.normal(0, 1, (5, 1)), base[:, :1]
    assert abs(stats.stratified_rank_test_p(one_x, one_y) - stats.rank_test_p(one_x, one_y)) < 0.01
    assert stats.stratified_rank_test_p(shifted, base) == stats.stratified_rank_test_p(shifted, base)  # seeded
    with pytest.raises(ValueError, match="different numbers of tasks"):
        stats.stratified_rank_test_p(base, base[:, :3])


def test_compare_is_the_interval_and_the_rank_test_together():
    """One task: P(X > Y) [95%] beside the exact rank test; several: the stratified one. with_holm
    adjusts the family's p as holm does and leaves the rest as it was."""
    x, y = np.array([5.0, 6, 7, 8, 9]), np.array([1.0, 2, 3, 4, 5.5])
    one = stats.compare(x, y)
    assert (one.probability, one.low, one.high) == stats.probability_of_improvement_interval(x, y)
    assert one.p == stats.rank_test_p(x, y) and np.isnan(one.holm)
    rng = np.random.default_rng(0)
    xs, ys = rng.normal(1, 1, (5, 3)), rng.normal(0, 1, (5, 3))
    many = stats.compare(xs, ys)
    assert many.p == stats.stratified_rank_test_p(xs, ys)
    assert many.probability == stats.probability_of_improvement(xs, ys)
    family = stats.with_holm([one, many])
    assert [c.holm for c in family] == pytest.approx(stats.holm([one.p, many.p]))
    assert [(c.probability, c.p) for c in family] == [(one.probability, one.p), (many.probability, many.p)]


def test_a_performance_profile_falls_from_one_to_zero():
    """The share of run x task scores above a threshold: all of them below the lowest score, none
    at or above the highest, the band brackets the curve, and one run per task has no band."""
    scores = np.array([[0.1, 0.5], [0.3, 0.9], [0.2, 0.7]])
    share, low, high = stats.performance_profile(scores, [0.0, 0.25, 0.6, 0.9])
    assert share.tolist() == [1.0, 4 / 6, 2 / 6, 0.0]
    assert np.all(low <= share + 1e-12) and np.all(share <= high + 1e-12)
    assert np.all(np.isnan(stats.performance_profile(scores[:1], [0.5])[1]))


# ---------------------------------------------------------------------- equivalence (docs/learning-at-scale.md)
def test_rank_sum_counts_are_the_exact_null_distribution():
    """Against enumerating every split of 5 + 4 distinct values."""
    import itertools
    values = np.arange(9.0)
    us = []
    for chosen in itertools.combinations(range(9), 5):
        mask = np.isin(np.arange(9), chosen)
        us.append(int(sum(a > b for a in values[mask] for b in values[~mask])))
    assert stats.rank_sum_counts(5, 4) == tuple(np.bincount(us, minlength=21))


def test_the_shifts_interval_inverts_the_exact_rank_test():
    """Just outside the interval scipy's exact one-sided test rejects at (1 - coverage) / 2, just
    inside it does not; the 5 v 5 interval is the 5th to the 21st of 25 differences (coverage 0.905)."""
    rng = np.random.default_rng(7)
    x, y = rng.normal(3.0, 2.0, 5), rng.normal(0.0, 2.0, 5)
    shift = stats.hodges_lehmann(x, y)
    d = np.sort((x[:, None] - y[None, :]).ravel())
    assert (shift.low, shift.high) == (d[4], d[20]) and shift.coverage == pytest.approx(1 - 2 * 12 / 252)
    assert shift.estimate == np.median(d)
    tail = (1 - shift.coverage) / 2
    eps = 1e-9
    def p_greater(delta):
        return scipy_stats.mannwhitneyu(x - delta, y, alternative="greater", method="exact").pvalue
    def p_less(delta):
        return scipy_stats.mannwhitneyu(x - delta, y, alternative="less", method="exact").pvalue
    assert p_greater(shift.low - eps) <= tail + 1e-12 < p_greater(shift.low + eps)
    assert p_less(shift.high + eps) <= tail + 1e-12 < p_less(shift.high - eps)


@pytest.mark.parametrize("seed", range(6))
def test_tost_is_below_alpha_exactly_where_the_interval_lies_inside_the_margin(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(0.3, 1.0, 10), rng.normal(0.0, 1.0, 10)
    for margin in np.linspace(0.05, 3.0, 60):
        test = stats.equivalence_test(x, y, margin)
        inside = -margin < test.shift.low and test.shift.high < margin
        assert (test.p <= 0.05) == inside, (margin, test)


def test_equivalence_on_known_answers():
    y = np.array([370.0, 390.0, 395.0, 400.0, 405.0, 410.0, 412.0, 415.0, 420.0, 425.0])
    same = stats.equivalence_test(y, y, 50.0)            # identical samples: no shift, inside +-50
    assert same.shift.estimate == 0.0 and same.shift.low == -same.shift.high and same.p < 0.05
    shifted = stats.equivalence_test(y - 100.0, y, 50.0)  # a copy 100 lower: the shift is exact, outside +-50
    assert shifted.shift.estimate == -100.0 and shifted.shift.high < -50.0 and shifted.p > 0.99
    assert stats.equivalence_test(y - 60.0, y, 50.0).p > 0.5  # 60 lower: its interval reaches past -50
    assert stats.equivalence_test(y - 10.0, y, 50.0).p < 0.05  # 10 lower, well inside +-50
    wide = np.array([100.0, 200.0, 300.0, 400.0, 500.0, 150.0, 250.0, 350.0, 450.0, 480.0])
    spread = stats.equivalence_test(wide, y, 50.0, family=4)   # a wide spread settles nothing at +-50
    assert spread.p > 0.05 and spread.shown > 50.0
    assert spread.shown == max(-stats.hodges_lehmann(wide, y, confidence=1 - 2 * 0.05 / 4).low,
                               stats.hodges_lehmann(wide, y, confidence=1 - 2 * 0.05 / 4).high)
    with pytest.raises(ValueError, match="margin must be positive"):
        stats.equivalence_test(y, y, 0.0)


def test_the_stratified_shift_pools_differences_within_tasks_in_units_of_their_scales():
    """Across tasks: one task gives the single-task answer; scaling a task's scores and passing its
    scale changes nothing; a shift of 10% of each task's scale is found as 0.10 in every task."""
    rng = np.random.default_rng(3)
    base = rng.normal(0.0, 0.05, (5, 3))
    scales = np.array([15.4, 55.0, 34.3])
    y = base * scales + scales
    x = (base[::-1] + 0.10) * scales + scales  # the same runs, 10% of each task's scale higher
    one = stats.hodges_lehmann(x[:, :1], y[:, :1], scales=scales[:1])
    assert np.allclose(astuple(one), astuple(stats.hodges_lehmann(x[:, 0] / scales[0], y[:, 0] / scales[0])))
    pooled = stats.hodges_lehmann(x, y, scales=scales)
    assert np.allclose(astuple(pooled), astuple(stats.hodges_lehmann(x / scales, y / scales)))
    assert pooled.estimate == pytest.approx(0.10) and pooled.low < 0.10 < pooled.high and pooled.coverage >= 0.90
    assert pooled.high - pooled.low < one.high - one.low  # 75 differences pin it better than 25
    assert stats.equivalence_test(x, y, 0.05, scales=scales).p > 0.05     # 0.10 is not within +-0.05
    assert stats.equivalence_test(x, y, 0.30, scales=scales).p < 0.05     # but is within +-0.30


def test_the_four_verdicts_in_their_order():
    worse = stats.Comparison(0.1, 0.0, 0.2, 0.001, holm=0.004)
    apart = stats.Comparison(0.45, 0.2, 0.7, 0.6, holm=1.0)
    inside = stats.Equivalence(stats.Shift(0.0, -1.0, 1.0, 0.9), 5.0, 0.001, holm=0.004, shown=2.0)
    outside = stats.Equivalence(stats.Shift(0.0, -9.0, 9.0, 0.9), 5.0, 0.4, holm=1.0, shown=12.0)
    assert stats.equivalence_verdict(worse, inside) == "worse"     # a found difference keeps its direction
    assert stats.equivalence_verdict(dataclasses_replace(worse, probability=0.9), outside) == "better"
    assert stats.equivalence_verdict(apart, inside) == "as well"
    assert stats.equivalence_verdict(apart, outside) == "not settled"


def dataclasses_replace(obj, **changes):
    import dataclasses
    return dataclasses.replace(obj, **changes)


def astuple(shift):
    return (shift.estimate, shift.low, shift.high, shift.coverage)


def test_the_blocked_test_on_known_answers():
    """The signed-rank p is scipy's exact one where there are no ties; an all-positive sample of n
    pairs gives the floor 2 / 2 ** n (7 pairs: 0.0156, so Holm over 8 can never pass 0.05); the
    shift of a symmetric sample is its centre, a shifted copy moves by the shift, and the interval
    has the coverage the table gives (n = 10, 95%: the 9th smallest to 9th largest Walsh average)."""
    rng = np.random.default_rng(7)
    for n in (5, 8, 12):
        d = rng.normal(0.1, 1.0, n)
        assert stats.signed_rank(d).p == pytest.approx(scipy_stats.wilcoxon(d, method="exact").pvalue, abs=1e-12)
    ordered = stats.signed_rank(np.linspace(0.1, 0.7, 7))
    assert ordered.p == pytest.approx(2 / 128) == ordered.floor and 8 * ordered.p > 0.05
    symmetric = np.array([-3.0, -1.0, -0.5, 0.5, 1.0, 3.0])
    assert stats.signed_rank(symmetric).shift.estimate == 0.0 and stats.signed_rank(symmetric).p == 1.0
    assert stats.signed_rank(symmetric + 2.0).shift.estimate == pytest.approx(2.0)
    ten = rng.normal(0.0, 1.0, 10)
    i, j = np.triu_indices(10)
    walsh = np.sort((ten[i] + ten[j]) / 2)
    shift = stats.signed_rank(ten).shift
    assert (shift.low, shift.high) == (walsh[8], walsh[-9])
    assert shift.coverage == pytest.approx(1 - 2 * 25 / 1024)  # P(W+ <= 8) = 25 / 1024 at n = 10
    assert stats.signed_rank([1.0, 1.0, 1.0]).p == pytest.approx(0.25)  # ties stay exact: 2 of 8 sign patterns
    assert stats.signed_rank([0.0, 0.3, 0.5, 0.9]).pairs == 3  # a zero gives no sign
