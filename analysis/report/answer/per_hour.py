"""Learning per hour, the practitioner's own question: does the faster run learn as
well, per second of training?

Reads the `per_hour` sweep: MinAtar Breakout whose env step waits 2 ms without CPU, single_env
and each parallel design at its best worker count in shape_check, every run alone, evaluated at
10 env-step checkpoints off the training clock, each checkpoint stored with the training seconds
it was reached at. A run's holdout return at t training seconds is that of its last checkpoint
reached by t: the policy its user would have had then. The window compared is the same for every
design: up to the shortest run's last checkpoint, so no run is carried past its end.

Per design and time: the IQM over seeds with a 95% stratified-bootstrap interval. At the end of
the window: P(design > single_env) with its 95% interval and the exact rank test's p, Holm-
corrected over the table's three comparisons. The same runs at (about) equal env steps: each run's
last checkpoint at or before single_env's last env step (the parallel designs' checkpoints fall
every tenth of their own, longer, budgets, so theirs may be up to a tenth earlier).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.io.load import TRAINING_EXPERIMENTS, RunSet
from analysis.report.framework.common import ARCH_ORDER, FigureData, Note, sweep_runs
from analysis.stats import Comparison, compare, interval, with_holm

GRID = 10
"""Points on the training-seconds axis."""


def _at(curve: pd.DataFrame, column: str, value: float) -> float:
    """The return of the last checkpoint with `column` <= value (NaN before the first)."""
    reached = curve[curve[column] <= value + 1e-9]
    return float(reached["return_mean"].iloc[-1]) if not reached.empty else float("nan")


def _compare(scores: dict[str, np.ndarray], designs: list[str]) -> dict[str, Comparison]:
    """P(design > single_env) [95%], rank-test p and Holm's p over the designs compared."""
    return dict(zip(designs, with_holm([compare(scores[design], scores["single_env"]) for design in designs])))


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = sweep_runs(rs.runs, "per_hour")
    runs = runs[runs["experiment"].isin(TRAINING_EXPERIMENTS)]
    if runs.empty:
        note("per hour: no runs of the `per_hour` sweep; run `python -m experiments.sweep per_hour`")
        return None
    holdout = rs.holdout[rs.holdout["run_id"].isin(runs["run_id"])].sort_values(["run_id", "env_step"])
    curves = {run_id: group for run_id, group in holdout.groupby("run_id")}
    runs = runs[runs["run_id"].isin(curves) & runs["run_id"].map(
        lambda r: bool(np.isfinite(curves[r]["train_seconds"]).all()) if r in curves else False)]
    designs = [a for a in ARCH_ORDER if a in set(runs["design"])]
    if "single_env" not in designs or len(designs) < 2:
        note("per hour: needs single_env and at least one parallel design with holdout checkpoints")
        return None
    window = min(float(curves[r]["train_seconds"].iloc[-1]) for r in runs["run_id"])
    start = max(float(curves[r]["train_seconds"].iloc[0]) for r in runs["run_id"])
    grid = np.linspace(start, window, GRID)
    steps_cap = float(runs.loc[runs["design"] == "single_env", "run_id"].map(
        lambda r: curves[r]["env_step"].iloc[-1]).min())
    rows, at_end, at_steps, workers, steps_in_window, checkpoint_at = [], {}, {}, {}, {}, {}
    for arch in designs:
        group = runs[runs["design"] == arch]
        workers[arch] = int(group["num_workers"].iloc[0]) if arch != "single_env" else 1
        for t in grid:
            scores = np.array([_at(curves[r], "train_seconds", t) for r in group["run_id"]])
            point, low, high = interval(scores[np.isfinite(scores)])
            rows.append({"design": arch, "num_workers": workers[arch], "train_seconds": float(t),
                         "iqm": point, "low": low, "high": high, "seeds": int(np.isfinite(scores).sum())})
        at_end[arch] = np.array([_at(curves[r], "train_seconds", window) for r in group["run_id"]])
        at_steps[arch] = np.array([_at(curves[r], "env_step", steps_cap) for r in group["run_id"]])
        steps_in_window[arch] = float(np.median([curves[r].loc[curves[r]["train_seconds"] <= window + 1e-9,
                                                                 "env_step"].iloc[-1] for r in group["run_id"]]))
        # the checkpoint the equal-steps comparison reads: each run's last at or before steps_cap
        checkpoint_at[arch] = float(np.median([curves[r].loc[curves[r]["env_step"] <= steps_cap + 1e-9,
                                                              "env_step"].iloc[-1] for r in group["run_id"]]))
    steps_rows = []  # the same runs against env steps, at each design's own checkpoints
    for arch in designs:
        group = runs.loc[runs["design"] == arch, "run_id"]
        for step in sorted(set().union(*(set(curves[r]["env_step"]) for r in group))):
            scores = np.array([_at(curves[r], "env_step", step) for r in group])
            point, low, high = interval(scores[np.isfinite(scores)])
            steps_rows.append({"design": arch, "env_step": float(step), "iqm": point, "low": low, "high": high})
    parallel = [d for d in designs if d != "single_env"]
    by_seconds, by_steps = _compare(at_end, parallel), _compare(at_steps, parallel)
    curve = pd.DataFrame(rows)
    made = FigureData(curve.round(4), parts={"curve": curve, "window": window,
                                                       "steps": pd.DataFrame(steps_rows)})
    table_rows, seeds = [], sorted(set(int(s) for s in runs["seed"]))
    for arch in designs:
        iqm_s, lo_s, hi_s = interval(at_end[arch])
        iqm_e, lo_e, hi_e = interval(at_steps[arch])
        row = {"design": f"{arch} ({workers[arch]})", "env steps by then (median)": f"{steps_in_window[arch]:,.0f}",
               f"holdout IQM at {window:.0f} s [95%]": f"{iqm_s:.1f} [{lo_s:.1f}, {hi_s:.1f}]",
               "P(> single_env) [95%], p (Holm)": "-",
               "nearest checkpoint <= single_env's last (env steps)": f"{checkpoint_at[arch]:,.0f}",
               "IQM there [95%] (not equal env steps)": f"{iqm_e:.1f} [{lo_e:.1f}, {hi_e:.1f}]",
               "P(> single_env) there, p (Holm)": "-"}
        name = arch.title().replace("_", "")
        made.number(f"PerHour{name}Iqm", iqm_s, "{:.1f}")
        made.number(f"PerHour{name}Steps", steps_in_window[arch])
        made.number(f"PerHour{name}StepsIqm", iqm_e, "{:.1f}")
        made.number(f"PerHour{name}StepsAt", checkpoint_at[arch])
        made.number(f"PerHour{name}Workers", workers[arch], "{:d}")
        if arch != "single_env":
            for key, comparison in (("P(> single_env) [95%], p (Holm)", by_seconds[arch]),
                                    ("P(> single_env) there, p (Holm)", by_steps[arch])):
                row[key] = (f"{comparison.probability:.2f} [{comparison.low:.2f}, {comparison.high:.2f}], "
                            f"{comparison.holm:.3f}")
            made.number(f"PerHour{name}Improve", by_seconds[arch].probability, "{:.2f}")
            made.number(f"PerHour{name}ImproveLow", by_seconds[arch].low, "{:.2f}")
            made.number(f"PerHour{name}ImproveHigh", by_seconds[arch].high, "{:.2f}")
            made.number(f"PerHour{name}Holm", by_seconds[arch].holm, "{:.3f}")
            made.number(f"PerHour{name}StepsImprove", by_steps[arch].probability, "{:.2f}")
            made.number(f"PerHour{name}StepsHolm", by_steps[arch].holm, "{:.3f}")
        table_rows.append(row)
    ratios = [steps_in_window[a] / steps_in_window["single_env"] for a in parallel]
    made.number("PerHourStepsRatioLow", min(ratios), "{:.1f}")
    made.number("PerHourStepsRatioHigh", max(ratios), "{:.1f}")
    made.number("PerHourWindow", window, "{:.0f}")
    made.number("PerHourStepsCap", steps_cap)
    made.number("PerHourSeeds", len(seeds), "{:d}")
    made.number("PerHourComparisons", len(parallel), "{:d}")
    made.number("PerHourSeedsFirst", seeds[0], "{:d}")
    made.number("PerHourSeedsLast", seeds[-1], "{:d}")
    waits = runs["config"].map(lambda c: c.get("env_step_wait_us")).dropna()
    wait_ms = float(waits.mode().iloc[0]) / 1000 if not waits.empty else None  # the env's wait, as its runs stored it
    if wait_ms is not None:
        made.number("PerHourWaitMs", wait_ms, "{:g}")
    wait = f" {wait_ms:g} ms" if wait_ms is not None else " (its wait not recorded)"
    made.table("per_hour", pd.DataFrame(table_rows),
               f"Learning per second of training (over the first {window:.0f} s): MinAtar "
               f"Breakout whose env step waits{wait}, each run alone, seeds "
               f"{seeds[0]}-{seeds[-1]} ({len(seeds)} a design); holdout IQM over seeds at {window:.0f} training "
               "seconds (the shortest run's last checkpoint; evaluation off the clock), and at each run's last "
               "checkpoint at or before single_env's last env step (each design's checkpoints fall on its own "
               "grid, so these are not equal env steps), with P(design > single_env), its 95% stratified-"
               "bootstrap interval, and the exact rank test's p Holm-corrected over the three comparisons of "
               "each column (one family each)")
    return made


def plot(report, made: FigureData) -> None:
    """Return against training seconds (the question) and against env steps (what the lead is made of)."""
    from analysis.report.framework.plotting import MARKERS, PALETTE, TEXT_WIDTH_IN, plt

    curve, steps = made.parts["curve"], made.parts["steps"]
    fig, axes = plt.subplots(1, 2, figsize=(TEXT_WIDTH_IN, 2.6), sharey=True)
    for ax, frame, x in ((axes[0], curve, "train_seconds"), (axes[1], steps, "env_step")):
        for arch, sub in frame.groupby("design", sort=False):
            n = int(curve.loc[curve["design"] == arch, "num_workers"].iloc[0])
            ax.plot(sub[x], sub["iqm"], marker=MARKERS.get(arch, "o"), ms=3, color=PALETTE[arch],
                    label=f"{arch} ({n})" if arch != "single_env" else arch)
            ax.fill_between(sub[x], sub["low"], sub["high"], color=PALETTE[arch], alpha=0.15)
        ax.grid(alpha=0.3)
    axes[0].axvline(made.parts["window"], color="grey", lw=0.8, ls=":")
    axes[0].set_xlabel("training seconds (each run's own; evaluation off the clock)")
    axes[1].set_xlabel("env steps (each design's own checkpoints)")
    axes[0].set_ylabel("holdout return (IQM, 95%)")
    axes[0].legend(loc="upper left")
    fig.tight_layout()
    report.figure(fig, "per_hour", made.data)
