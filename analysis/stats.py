"""Aggregate statistics over few seeds, after Agarwal et al. 2021 ("Deep RL at the Edge of the
Statistical Precipice") and its reference implementation, rliable.

Scores are arrays shaped (runs, tasks): one row per seed, one column per task (env). Every
interval is a percentile interval of a stratified bootstrap: each task's runs are resampled
with replacement independently of the other tasks', so a task with more runs does not drown out
the others. All randomness comes from an explicit seed: the same call gives the same interval.
tests/test_stats.py checks the point estimates against rliable exactly and the intervals within
bootstrap noise (rliable's reference values are stored in tests/fixtures/).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Callable

import numpy as np
from scipy import stats

DEFAULT_REPS = 2_000
"""Bootstrap resamples per interval: endpoints move by ~1% of the spread between seeds of the bootstrap."""
DEFAULT_SEED = 20211203


def _as_scores(scores) -> np.ndarray:
    """(runs,) or (runs, tasks) -> float array (runs, tasks)."""
    array = np.asarray(scores, dtype=float)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"scores must be a non-empty (runs,) or (runs, tasks) array, got shape {array.shape}")
    return array


def iqm(scores) -> float:
    """Interquartile mean: the mean of the middle 50% of all run x task scores (scipy's trim_mean
    cuts floor(0.25 n) scores from each end, as rliable does)."""
    return float(stats.trim_mean(_as_scores(scores), proportiontocut=0.25, axis=None))


def mean(scores) -> float:
    return float(np.mean(_as_scores(scores)))


def median(scores) -> float:
    return float(np.median(_as_scores(scores)))


AGGREGATES: dict[str, Callable[[np.ndarray], float]] = {"iqm": iqm, "mean": mean, "median": median}


def _resample(scores: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """(reps, runs, tasks): each task's runs drawn with replacement, independently per task."""
    runs, tasks = scores.shape
    picks = rng.integers(0, runs, size=(reps, runs, tasks))
    return np.take_along_axis(np.broadcast_to(scores, (reps, runs, tasks)), picks, axis=1)


def _batched(aggregate: str, samples: np.ndarray) -> np.ndarray:
    flat = samples.reshape(samples.shape[0], -1)
    if aggregate == "iqm":
        return stats.trim_mean(flat, proportiontocut=0.25, axis=1)
    if aggregate == "mean":
        return flat.mean(axis=1)
    if aggregate == "median":
        return np.median(flat, axis=1)
    raise ValueError(f"unknown aggregate {aggregate!r}; valid: {', '.join(AGGREGATES)}")


def interval(scores, aggregate: str = "iqm", *, reps: int = DEFAULT_REPS, confidence: float = 0.95,
             seed: int = DEFAULT_SEED) -> tuple[float, float, float]:
    """(point estimate, low, high): the aggregate and its stratified-bootstrap percentile interval."""
    array = _as_scores(scores)
    point = AGGREGATES[aggregate](array)
    if array.shape[0] == 1:  # one run per task: nothing to resample, no honest interval
        return point, float("nan"), float("nan")
    samples = _batched(aggregate, _resample(array, reps, np.random.default_rng(seed)))
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(samples, [tail, 100 - tail])
    return point, float(low), float(high)


def probability_of_improvement(x, y) -> float:
    """P(X > Y): the Mann-Whitney U statistic of x against y over n * m pairs (ties count half),
    per task, averaged over tasks."""
    xs, ys = _as_scores(x), _as_scores(y)
    if xs.shape[1] != ys.shape[1]:
        raise ValueError(f"x and y cover different numbers of tasks ({xs.shape[1]} vs {ys.shape[1]})")
    per_task = [stats.mannwhitneyu(xs[:, t], ys[:, t], alternative="greater").statistic / (len(xs) * len(ys))
                for t in range(xs.shape[1])]
    return float(np.mean(per_task))


def probability_of_improvement_interval(x, y, *, reps: int = DEFAULT_REPS, confidence: float = 0.95,
                                        seed: int = DEFAULT_SEED) -> tuple[float, float, float]:
    """(P(X > Y), low, high), x's and y's runs resampled independently within each task."""
    xs, ys = _as_scores(x), _as_scores(y)
    point = probability_of_improvement(xs, ys)
    if len(xs) == 1 or len(ys) == 1:
        return point, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    bx, by = _resample(xs, reps, rng), _resample(ys, reps, rng)
    # Vectorised U / (n m) per task: count x > y pairs, ties as one half.
    greater = (bx[:, :, None, :] > by[:, None, :, :]).mean(axis=(1, 2))
    ties = (bx[:, :, None, :] == by[:, None, :, :]).mean(axis=(1, 2))
    samples = (greater + 0.5 * ties).mean(axis=1)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(samples, [tail, 100 - tail])
    return point, float(low), float(high)


EXACT_UP_TO = 200_000
"""rank_test_p enumerates every split of the pooled runs up to this many (10 vs 10 is 184,756)."""


def _u(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Mann-Whitney U of x against y along `axis` (ties count half), vectorised for permutation_test."""
    d = np.moveaxis(x, axis, -1)[..., :, None] - np.moveaxis(y, axis, -1)[..., None, :]
    return (d > 0).sum(axis=(-1, -2)) + 0.5 * (d == 0).sum(axis=(-1, -2))


def rank_test_p(x, y) -> float:
    """Two-sided p of the Mann-Whitney U test of x against y (one task): exact, by enumerating
    every split of the pooled runs (ties within a side, such as runs at a return cap, included),
    up to EXACT_UP_TO splits; above that its normal approximation. Where every pair is ordered one
    way the bootstrap interval of P(X > Y) collapses to a point, 1.00 [1.00, 1.00], which reads as
    a certainty; this p says how unlikely that order is if the two are alike: 2 / C(n + m, n),
    0.0079 at 5 seeds a side (tests/test_stats.py::test_the_rank_test_says_how_rare_an_ordered_sample_is)."""
    xs, ys = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if len(xs) == 0 or len(ys) == 0:
        raise ValueError("rank_test_p needs at least one score on each side")
    if math.comb(len(xs) + len(ys), len(xs)) > EXACT_UP_TO:
        return float(stats.mannwhitneyu(xs, ys, alternative="two-sided", method="asymptotic").pvalue)
    if min(len(xs), len(ys)) < 2:  # scipy's permutation test wants two a side: enumerate the splits here
        pooled, n = np.concatenate([xs, ys]), len(xs)
        centre = len(xs) * len(ys) / 2
        observed = abs(float(_u(xs, ys)) - centre)
        splits = [np.isin(np.arange(len(pooled)), chosen) for chosen in itertools.combinations(range(len(pooled)), n)]
        extreme = sum(abs(float(_u(pooled[m], pooled[~m])) - centre) >= observed - 1e-12 for m in splits)
        return extreme / len(splits)
    return _exact_p(xs, ys)


def _exact_p(xs: np.ndarray, ys: np.ndarray) -> float:
    """scipy.stats.permutation_test's exact two-sided p of U over every split of the pooled runs
    (twice the smaller share of splits at or below, or at or above, the observed U; at most 1),
    counted, not enumerated: U is the x side's rank sum less a constant, so the splits are counted
    by their sum of (doubled, so integer) midranks, one run at a time. The same p to the bit, in
    milliseconds where enumerating 10 vs 10 took half a second (the report makes ~90 of them)."""
    pooled = np.concatenate([xs, ys])
    doubled = np.rint(2 * stats.rankdata(pooled)).astype(np.int64)  # midranks x 2: ties stay exact
    n, top = len(xs), int(doubled.sum())
    ways = np.zeros((n + 1, top + 1), dtype=np.int64)  # [k, s]: splits of k runs whose doubled ranks sum to s
    ways[0, 0] = 1
    for rank in doubled:
        ways[1:, rank:] += ways[:-1, :top + 1 - rank]  # numpy buffers the overlap: each run counted once
    observed, splits = int(doubled[:n].sum()), ways[n]
    total = int(splits.sum())
    less, greater = int(splits[:observed + 1].sum()), int(splits[observed:].sum())
    return float(min(1.0, min(less / total, greater / total) * 2))


def seeds_summary(values, *, reps: int = DEFAULT_REPS, seed: int = DEFAULT_SEED) -> dict:
    """One scalar per seed -> n, mean, median, iqm with its 95% interval, min, max."""
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    if array.size == 0:
        return {"n": 0, "mean": np.nan, "median": np.nan, "iqm": np.nan, "iqm_low": np.nan, "iqm_high": np.nan,
                "min": np.nan, "max": np.nan}
    point, low, high = interval(array, "iqm", reps=reps, seed=seed)
    return {"n": int(array.size), "mean": float(array.mean()), "median": float(np.median(array)), "iqm": point,
            "iqm_low": low, "iqm_high": high, "min": float(array.min()), "max": float(array.max())}


def holm(pvalues) -> list[float]:
    """Holm's step-down adjustment of p-values for the comparisons one table makes (family-wise
    error at the level compared against): the k-th smallest p times (m - k + 1), made monotone,
    capped at 1 (tests/test_stats.py::test_holm_adjusts_as_the_step_down_procedure_does)."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    adjusted = np.empty_like(p)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[index]))
        adjusted[index] = running
    return adjusted.tolist()


STRATIFIED_RESAMPLES = 20_000
"""Relabellings behind stratified_rank_test_p: its p moves by at most ~0.003 at p 0.05 between seeds."""


def stratified_rank_test_p(x, y, *, resamples: int = STRATIFIED_RESAMPLES, seed: int = DEFAULT_SEED) -> float:
    """Two-sided p of the test that goes with probability_of_improvement over several tasks: its
    statistic, the per-task U / (n m) averaged over tasks, against its distribution when each
    task's pooled runs are relabelled at random within that task (a task's scale never mixes with
    another's, as in van Elteren's stratified rank test). Exact enumeration grows as C(n + m, n)
    to the power of the tasks (252^5 at 5 seeds on 5 games), so the relabellings are drawn:
    Monte Carlo with the observed labelling counted, p = (1 + extreme) / (1 + resamples)
    (tests/test_stats.py::test_the_stratified_rank_test_finds_a_shift_every_task_shares)."""
    xs, ys = _as_scores(x), _as_scores(y)
    if xs.shape[1] != ys.shape[1]:
        raise ValueError(f"x and y cover different numbers of tasks ({xs.shape[1]} vs {ys.shape[1]})")
    n, m = len(xs), len(ys)
    pooled = np.concatenate([xs, ys])  # (n + m, tasks)
    rng = np.random.default_rng(seed)
    # (resamples, n + m, tasks): a random order of each task's pooled runs; the first n are "x".
    order = np.argsort(rng.random((resamples, n + m, pooled.shape[1])), axis=1)
    shuffled = np.take_along_axis(np.broadcast_to(pooled, order.shape), order, axis=1)

    def statistic(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # (..., n, tasks), (..., m, tasks) -> (...,)
        d = a[..., :, None, :] - b[..., None, :, :]
        return ((d > 0).mean(axis=(-3, -2)) + 0.5 * (d == 0).mean(axis=(-3, -2))).mean(axis=-1)

    observed = abs(float(statistic(xs, ys)) - 0.5)
    drawn = np.abs(statistic(shuffled[:, :n], shuffled[:, n:]) - 0.5)
    return float((1 + np.sum(drawn >= observed - 1e-12)) / (1 + resamples))


def performance_profile(scores, thresholds, *, reps: int = DEFAULT_REPS, confidence: float = 0.95,
                        seed: int = DEFAULT_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Agarwal et al.'s run-score distribution: the share of all run x task scores above each
    threshold, with a stratified-bootstrap percentile band. Returns (share, low, high), each shaped
    like `thresholds` (tests/test_stats.py::test_a_performance_profile_falls_from_one_to_zero)."""
    array = _as_scores(scores)
    tau = np.asarray(thresholds, dtype=float)
    share = (array.reshape(-1)[:, None] > tau[None, :]).mean(axis=0)
    if array.shape[0] == 1:
        return share, np.full_like(share, np.nan), np.full_like(share, np.nan)
    samples = _resample(array, reps, np.random.default_rng(seed)).reshape(reps, -1)
    curves = (samples[:, :, None] > tau[None, None, :]).mean(axis=1)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(curves, [tail, 100 - tail], axis=0)
    return share, low, high


@dataclasses.dataclass(frozen=True)
class Comparison:
    """One design's runs against another's, as every comparing table shows them: P(X > Y) with its
    95% interval, the rank test's p (exact at one task up to EXACT_UP_TO splits, stratified over
    several) and, once a table's comparisons are known, that p after Holm's correction over them.
    The interval alone is not the verdict: it collapses where every pair is ordered, the rank test
    does not."""
    probability: float
    low: float
    high: float
    p: float
    holm: float = float("nan")


def compare(x, y) -> Comparison:
    """x against y: P(X > Y) [95%] and the rank test that goes with it (tests/test_stats.py::
    test_compare_is_the_interval_and_the_rank_test_together)."""
    probability, low, high = probability_of_improvement_interval(x, y)
    tasks = _as_scores(x).shape[1]
    return Comparison(probability, low, high, rank_test_p(x, y) if tasks == 1 else stratified_rank_test_p(x, y))


def with_holm(comparisons: list[Comparison]) -> list[Comparison]:
    """The same comparisons with Holm's p over them all: one call per table's family."""
    return [dataclasses.replace(c, holm=h) for c, h in zip(comparisons, holm([c.p for c in comparisons]))]


# ---------------------------------------------------------------------- equivalence
@functools.lru_cache(maxsize=None)
def rank_sum_counts(n: int, m: int) -> tuple[int, ...]:
    """How many of the C(n + m, n) splits of n + m distinct values give each Mann-Whitney U
    (0..n m): the exact null distribution the shift's interval and the equivalence test invert."""
    table = {(0, j): [1] for j in range(m + 1)}
    table.update({(i, 0): [1] for i in range(n + 1)})
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a, b = table[(i - 1, j)], table[(i, j - 1)]  # the largest value is x's (adds j to U) or y's
            row = [0] * (i * j + 1)
            for u, c in enumerate(a):
                row[u + j] += c
            for u, c in enumerate(b):
                row[u] += c
            table[(i, j)] = row
    return tuple(table[(n, m)])


def _summed_u_cdf(n: int, m: int, tasks: int) -> np.ndarray:
    """P(S <= s) for s = 0..tasks n m, S the sum of `tasks` independent null U's of n v m."""
    counts = np.array(rank_sum_counts(n, m), dtype=np.int64)
    total = counts
    for _ in range(tasks - 1):
        total = np.convolve(total, counts)
    return np.cumsum(total) / total.sum()


def _differences(x, y, scales) -> tuple[np.ndarray, int, int, int]:
    """The sorted within-task pairwise differences x - y, each task's divided by its scale."""
    xs, ys = _as_scores(x), _as_scores(y)
    if xs.shape[1] != ys.shape[1]:
        raise ValueError(f"x and y cover different numbers of tasks ({xs.shape[1]} vs {ys.shape[1]})")
    if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise ValueError("the shift needs a finite score for every run of every task")
    scale = np.ones(xs.shape[1]) if scales is None else np.asarray(scales, dtype=float).ravel()
    if scale.shape != (xs.shape[1],) or not (scale > 0).all():
        raise ValueError(f"scales must be one positive number per task ({xs.shape[1]}), got {scales!r}")
    d = (xs[:, None, :] - ys[None, :, :]) / scale
    return np.sort(d.ravel()), len(xs), len(ys), xs.shape[1]


def _order_statistic_index(cdf: np.ndarray, confidence: float) -> int:
    """k: the largest with P(S <= k - 1) <= (1 - confidence) / 2 (0 where none is)."""
    return int(np.sum(cdf <= (1 - confidence) / 2 + 1e-12))


@dataclasses.dataclass(frozen=True)
class Shift:
    """The Hodges-Lehmann shift of x over y with its exact interval and the coverage that interval
    achieves (the rank-sum distribution is discrete: at or just above the one asked for)."""
    estimate: float
    low: float
    high: float
    coverage: float


def hodges_lehmann(x, y, *, confidence: float = 0.90, scales=None) -> Shift:
    """x's shift over y: the median of the pairwise differences, with the exact interval that
    inverts the rank-sum test (the k-th smallest to the k-th largest difference; Bauer 1972; no-ties
    distribution). Over several tasks ((runs, tasks) arrays, the same runs a side in each) the
    differences are taken within a task, divided by its scale, and pooled; the interval inverts the
    stratified test whose statistic is the summed U, exactly (the tasks' U distributions convolved).
    (tests/test_stats.py::test_the_shifts_interval_inverts_the_exact_rank_test)"""
    d, n, m, tasks = _differences(x, y, scales)
    cdf = _summed_u_cdf(n, m, tasks)
    k = _order_statistic_index(cdf, confidence)
    estimate = float(np.median(d))
    if k == 0:
        return Shift(estimate, float("-inf"), float("inf"), 1.0)
    return Shift(estimate, float(d[k - 1]), float(d[len(d) - k]), float(1 - 2 * cdf[k - 1]))


@dataclasses.dataclass(frozen=True)
class Equivalence:
    """Two one-sided tests of x against y with margin m: p is the larger of the exact one-sided
    p's that x + m beats y and that x - m falls below it; below a level alpha exactly where the
    1 - 2 alpha shift interval lies inside (-m, m). `holm` once the family is known; `shown`: the
    smallest margin the family's first Holm step would have called equivalent."""
    shift: Shift
    margin: float
    p: float
    holm: float = float("nan")
    shown: float = float("nan")


def equivalence_test(x, y, margin: float, *, scales=None, family: int = 1, alpha: float = 0.05) -> Equivalence:
    """TOST on the rank-sum test: is x's shift over y inside +-margin? The shift's interval is the
    1 - 2 alpha one (90% at 0.05); `shown` comes from the 1 - 2 alpha / family one, the family's first
    Holm step. Over several tasks the margin is in units of the scales
    (tests/test_stats.py::test_equivalence_on_known_answers)."""
    if not margin > 0:
        raise ValueError(f"the equivalence margin must be positive, got {margin!r}")
    d, n, m, tasks = _differences(x, y, scales)
    cdf = _summed_u_cdf(n, m, tasks)

    def at_least(count: int) -> float:  # P(S >= count), S the null summed U
        return 1.0 if count <= 0 else float(1 - cdf[count - 1])

    p_low = at_least(int(np.sum(d > -margin)))   # x + m beats y
    p_high = at_least(int(np.sum(d < margin)))   # x - m falls below y (S is symmetric)
    wide = hodges_lehmann(x, y, confidence=1 - 2 * alpha / family, scales=scales)
    return Equivalence(hodges_lehmann(x, y, confidence=1 - 2 * alpha, scales=scales), float(margin),
                       max(p_low, p_high), shown=max(-wide.low, wide.high))


def equivalence_with_holm(tests: list[Equivalence]) -> list[Equivalence]:
    """The same tests with Holm's p over their TOST p's: one call per family."""
    return [dataclasses.replace(t, holm=h) for t, h in zip(tests, holm([t.p for t in tests]))]


def equivalence_verdict(rank: Comparison, equivalence: Equivalence, *, alpha: float = 0.05) -> str:
    """The four words, in the pre-registered order (docs/learning-at-scale.md): 'better' or 'worse'
    where the rank test's Holm p is below alpha; else 'as well' where the TOST's Holm p is; else
    'not settled'."""
    if rank.holm < alpha:
        return "better" if rank.probability > 0.5 else "worse"
    if equivalence.holm < alpha:
        return "as well"
    return "not settled"


def _sign_patterns(ranks) -> np.ndarray:
    """ways[s]: the subsets of `ranks` (positive integers) whose sum is s, out of 2 ** len(ranks)."""
    ranks = [int(r) for r in ranks]
    ways = np.zeros(sum(ranks) + 1, dtype=np.int64)
    ways[0] = 1
    for rank in ranks:
        ways[rank:] = ways[rank:] + ways[:-rank]  # numpy buffers the right side: each rank counted once
    return ways


def signed_rank_cdf(n: int) -> np.ndarray:
    """P(W+ <= w) for w = 0 .. n (n + 1) / 2, W+ the signed-rank statistic of n pairs under the null
    (each pair's sign a fair coin, no ties): the subsets of ranks 1..n by their sum, out of 2 ** n."""
    return np.cumsum(_sign_patterns(range(1, n + 1))) / float(2 ** n)


@dataclasses.dataclass(frozen=True)
class Paired:
    """Paired differences (one a block: a seed whose runs were made back to back) tested blocked:
    the exact two-sided Wilcoxon signed-rank p, the one-sample Hodges-Lehmann shift with its exact
    interval, and `floor`, the smallest p these pairs could give (2 / 2 ** n), which says what a
    family's correction leaves them able to show."""
    pairs: int
    p: float
    shift: Shift
    floor: float


def signed_rank(differences, *, confidence: float = 0.95) -> Paired:
    """The blocked test of paired differences (for speeds, per-seed log ratios): exact, by counting
    the 2 ** n sign patterns (doubled midranks, so ties among |d| stay exact; a zero difference gives
    no sign and is dropped, as Wilcoxon's original rule); the shift is the median of the Walsh
    averages of the nonzero differences, its interval the k-th smallest to k-th largest of them,
    inverting the test (no-ties distribution; tests/test_stats.py::test_the_blocked_test_on_known_answers)."""
    d = np.asarray(differences, dtype=float).ravel()
    if not np.isfinite(d).all():
        raise ValueError("the signed-rank test needs finite differences")
    nonzero = d[d != 0]
    n = len(nonzero)
    if n == 0:
        raise ValueError("the signed-rank test needs at least one nonzero difference")
    doubled = np.rint(2 * stats.rankdata(np.abs(nonzero))).astype(np.int64)
    ways = _sign_patterns(doubled)
    observed = int(doubled[nonzero > 0].sum())
    total = float(ways.sum())
    p = min(1.0, 2 * min(ways[:observed + 1].sum(), ways[observed:].sum()) / total)
    i, j = np.triu_indices(n)  # the same pairs the p counts: an interval that inverts that test
    walsh = np.sort((nonzero[i] + nonzero[j]) / 2)
    cdf = signed_rank_cdf(n)
    k = _order_statistic_index(cdf, confidence)
    estimate = float(np.median(walsh))
    shift = (Shift(estimate, float("-inf"), float("inf"), 1.0) if k == 0 else
             Shift(estimate, float(walsh[k - 1]), float(walsh[len(walsh) - k]), float(1 - 2 * cdf[k - 1])))
    return Paired(n, float(p), shift, 2.0 / 2 ** n)
