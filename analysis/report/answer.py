"""The answer, in one table: per design, how much faster than single_env on 2 and on 16 cores,
whether it learns as well at equal env steps, and what bounds it (the README, the report page's
first screen and the writeup's first page all print this one table: paper/tables/answer.md).

Every cell quotes a test made elsewhere in the report or here, never recomputed another way:
- speed on 2 cores: the `speed` sweep (7 runs a cell, one at a time): the ratio of medians with a
  95% bootstrap interval, and the exact rank test Holm-corrected over this table's speed comparisons
  (the family "2-core speed"); a verdict word only where the corrected p is below 0.05;
- speed on 16 cores: the `sixteen_cores` stores (1-3 runs a cell: a ratio, no test);
- learning at equal env steps: the mean holdout return over checkpoints against single_env's,
  P(X > Y) with its interval, and Holm's p as the CartPole improvement table (its learning family)
  and the MinAtar aggregate (its six comparisons) computed them;
- the bound: one rule everywhere (sixteen.bound): the CPU where a run kept >= 90% of the cores busy,
  else the role its own breakdown names as busy (16 cores; the 2-core speed runs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from analysis import stats
from analysis.load import RunSet
from analysis.report import at_scale, improvement, sixteen, suite
from analysis.report.claims import ALPHA
from analysis.report.common import FigureData, Note, _sweep, macro_name

DESIGNS = ("actor_learner", "vector_env", "hogwild", "pqn", "high_utd")
SETTINGS = {"busy": ("CartPole", "a 1 ms busy env step"), "waiting": ("practitioner_shape", "a 2.2 ms waiting step")}
BOOTSTRAP = 2_000


def ratio_interval(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """median(x) / median(y) with a 95% percentile-bootstrap interval (runs resampled in each group)."""
    point = float(np.median(x) / np.median(y))
    if len(x) < 2 or len(y) < 2:
        return point, float("nan"), float("nan")
    ci = scipy_stats.bootstrap((x, y), lambda a, b, axis=-1: np.median(a, axis=axis) / np.median(b, axis=axis),
                               vectorized=True, n_resamples=BOOTSTRAP, method="percentile",
                               random_state=np.random.default_rng(0)).confidence_interval
    return point, float(ci.low), float(ci.high)


def _speeds(rs: RunSet) -> pd.DataFrame:
    """The `speed` sweep's comparisons: one row per (setting, design), Holm over all of them."""
    runs = _sweep(rs.runs, "speed")
    rows = []
    for setting in SETTINGS:
        part = runs[runs["env_step_cost_us"].fillna(0) > 0] if setting == "busy" else runs[
            runs["env_step_cost_us"].fillna(0) == 0]
        base = part.loc[part["architecture"] == "single_env", "env_steps_per_sec"].to_numpy(float)
        for design in DESIGNS:
            cell = part[part["architecture"] == design]
            if cell.empty or not len(base):
                continue
            mine = cell["env_steps_per_sec"].to_numpy(float)
            point, low, high = ratio_interval(mine, base)
            bounds = sorted({sixteen.bound(design, int(n), r)
                             for n, r in zip(cell["num_workers"], cell["result"])} - {"?"})
            rows.append({"setting": setting, "design": design, "workers": int(cell["num_workers"].iloc[0]),
                         "runs": len(mine), "baseline_runs": len(base), "ratio": point, "low": low, "high": high,
                         "p": stats.rank_test_p(mine, base), "bound": "/".join(bounds)})
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["holm"] = stats.holm(frame["p"].to_numpy())
    return frame


def _speed_word(row) -> str:
    if row.holm < ALPHA:
        return "faster" if row.ratio > 1 else "slower"
    return "not told apart"


def _speed_cell(row) -> str:
    if row is None:
        return "not measured"
    return (f"{row.ratio:.2f}x [{row.low:.2f}, {row.high:.2f}] ({row.workers}; {row.runs} v {row.baseline_runs} runs), "
            f"{_speed_word(row)}, Holm p {row.holm:.3f}; bound: {row.bound or '-'}")


def _learning(rs: RunSet, note: Note) -> dict[tuple[str, str], tuple[float, float, float, float]]:
    """(env, design) -> (P(X > single_env), low, high, Holm p) on the mean holdout return over
    checkpoints, as the improvement table and the MinAtar aggregate tested them."""
    out = {}
    made = improvement.data(rs, lambda _: None)
    if made is not None:
        rows = made.data[(made.data["metric"] == "holdout_auc") & (made.data["env"] == "CartPole")]
        for r in rows.itertuples():
            out[("CartPole", r.architecture)] = (r.probability, r.low, r.high, r.holm_p)
    agg = suite.data(rs, lambda _: None)
    if agg is not None:
        numbers = {name: value for name, value, _ in agg.numbers}
        for design in suite.DESIGNS[1:]:
            key = macro_name("minatar agg", design, "auc")
            if key + "Poi" in numbers:
                out[("MinAtar", design)] = tuple(numbers[key + s] for s in ("Poi", "PoiLow", "PoiHigh", "Holm"))
    if not out:
        note("answer: no learning comparisons (the `architectures` and `minatar_suite` sweeps' runs)")
    return out


def _at_scale(rs: RunSet) -> dict[tuple[str, int], tuple[float, float, float, float]]:
    """(design, workers) -> (P, low, high, Holm p) on CartPole at 8 and 16 workers, as the
    pre-registered families of analysis/report/at_scale.py tested them."""
    made = at_scale.data(rs, lambda _: None)
    if made is None:
        return {}
    rows = made.data[made.data["family"].str.startswith("CartPole")]
    return {(r.design, int(r.workers)): (r.probability, r.low, r.high, r.holm) for r in rows.itertuples()}


def _learning_cell(value) -> str:
    if value is None:
        return "not run"
    p, low, high, holm = value
    word = ("better" if p > 0.5 else "worse") if holm < ALPHA else "not told apart"
    return f"{p:.2f} [{low:.2f}, {high:.2f}], {word}"


def data(rs: RunSet, note: Note) -> FigureData | None:
    speeds = _speeds(rs.on_machine(""))
    if speeds.empty:
        note("answer: no runs of the `speed` sweep (`python -m experiments.sweep speed`): the 2-core speeds are "
             "not measured")
    big = sixteen.data(rs, lambda _: None)
    big_points = big.parts["points"] if big is not None else pd.DataFrame()
    learning = _learning(rs.on_machine(""), note)
    scale = _at_scale(rs.on_machine(""))
    rows, made = [], FigureData(speeds)
    for design in DESIGNS:
        cells = {s: next(iter(speeds[(speeds["setting"] == s) & (speeds["design"] == design)].itertuples()), None)
                 if not speeds.empty else None for s in SETTINGS}
        sixteen_cell, bound16, best = "not run", "", None
        if not big_points.empty and (big_points["architecture"] == design).any():
            mine = big_points[big_points["architecture"] == design]
            best = mine.loc[mine["env_steps_per_sec"].idxmax()]
            base = float(big_points.loc[big_points["architecture"] == "single_env", "env_steps_per_sec"].iloc[0])
            sixteen_cell = f"{best['env_steps_per_sec'] / base:.1f}x ({int(best['num_workers'])}; {int(best['runs'])} run" \
                           f"{'s' if best['runs'] > 1 else ''}, no test)"
            made.number(macro_name("answer sixteen", design), best["env_steps_per_sec"] / base, "{:.1f}")
            made.number(macro_name("answer sixteen", design, "workers"), int(best["num_workers"]), "{:d}")
            made.number(macro_name("answer sixteen", design, "runs"), int(best["runs"]), "{:d}")
            made.number(macro_name("answer sixteen", design, "bound"), best["bound"], "{}")
            bound16 = "; ".join(f"{int(r.num_workers)}: {r.bound.split(' (')[0]}" for r in mine.itertuples())
        rows.append({"design": design, "2 cores, 1 ms busy step": _speed_cell(cells["busy"]),
                     "2 cores, 2.2 ms waiting step (the emulation)": _speed_cell(cells["waiting"]),
                     "16 cores, 2.2 ms busy step": sixteen_cell,
                     "learns as well per env step? CartPole, 2 workers": _learning_cell(learning.get(("CartPole", design))),
                     "CartPole, 8 / 16 workers": " / ".join(_learning_cell(scale.get((design, n))) for n in (8, 16)),
                     "5 MinAtar games, 2 workers": _learning_cell(learning.get(("MinAtar", design))),
                     "bound on 16 cores (workers: role)": bound16 or "-"})
        for s, row in cells.items():
            if row is not None:
                for suffix, value, fmt in (("", row.ratio, "{:.2f}"), ("low", row.low, "{:.2f}"),
                                           ("high", row.high, "{:.2f}"), ("holm", row.holm, "{:.3f}"),
                                           ("workers", row.workers, "{:d}"), ("runs", row.runs, "{:d}"),
                                           ("verdict", _speed_word(row), "{}"), ("bound", row.bound or "-", "{}")):
                    made.number(macro_name("answer", s, design, suffix), value, fmt)
    made.number("AnswerSpeedComparisons", len(speeds), "{:d}")
    if not speeds.empty:
        made.number("AnswerSpeedRunsMin", int(speeds["runs"].min()), "{:d}")
        made.number("AnswerSpeedBaselineRuns", int(speeds["baseline_runs"].min()), "{:d}")
        made.number("AnswerSpeedTold", int((speeds["holm"] < ALPHA).sum()), "{:d}")
    made.table("answer", pd.DataFrame(rows), _caption(speeds))
    return made


def _caption(speeds: pd.DataFrame) -> str:
    runs = f"{int(speeds['runs'].min())}-{int(speeds['runs'].max())}" if not speeds.empty else "no"
    return ("Speed: env steps/s as a multiple of single_env's, median ratio [95% bootstrap interval] (workers), from "
            f"runs made one at a time ({runs} a cell, the `speed` sweep; evaluation seeds), 'faster' only where the "
            f"exact rank test, Holm-corrected over the table's {len(speeds)} speed comparisons, is below 0.05; 16 "
            "cores: the best count's median ratio, 1-3 runs, no test. Learning: P(design's mean holdout return over "
            "checkpoints > single_env's) [95%], tested as the CartPole improvement table and the MinAtar aggregate "
            "test it at 2 workers, and at 8 and 16 workers as the pre-registered families of the learning-at-scale "
            "study test it (CartPole, 10 seeds, the env step waiting 2.2 ms; docs/learning-at-scale.md), Holm within "
            "each; 'not told apart' where the corrected p is 0.05 or more.")
