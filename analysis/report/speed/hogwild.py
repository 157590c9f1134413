"""8. hogwild: lock-free against locked shared-weight updates (the `hogwild` sweep): how often
optimizer steps overlapped another worker's write and how many of the shared Adam state's step
increments a race lost, against the return reached (final and mean over checkpoints) and
throughput (env steps/s once learning starts, SPEED); and the lock question itself, as the
probability that the lock-free runs learn better than the locked ones, with its 95%
stratified-bootstrap interval, the exact rank test's p, Holm's over the learning measures and the
verdict word it carries (`hogwild_lock` table)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import stats
from analysis.io.load import RunSet
from analysis.report.framework.claims import ALPHA, SOLVED_AT, compare_measures, macro_measure, verdict
from analysis.report.framework.common import (SPEED, FigureData, Note, arch_label, ci, sweep_runs, holdout_auc, macro_name,
                                              speed_missing, speeds_only_where_made_alone)

LOCK_METRICS = {"final_holdout_return": "final holdout return", "holdout_auc": "mean holdout over checkpoints",
                SPEED: "env steps/s once learning"}
"""What the lock question compares, lock-free against locked, seed by seed pooled."""


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = sweep_runs(rs.runs, "hogwild").copy()
    if runs.empty:
        note("hogwild: no runs of the `hogwild` sweep; run `python -m experiments.sweep hogwild`")
        return None
    runs["config"] = runs.apply(lambda r: f"hogwild ({'lock' if r['hogwild_lock'] else 'no lock'})"
                                if r["design"] == "hogwild" else arch_label(r), axis=1)
    runs["holdout_auc"] = holdout_auc(rs.holdout, runs["run_id"])
    runs = speeds_only_where_made_alone(runs)
    speed_missing(runs, note, "hogwild")  # named; its learning is still compared
    adam = runs["shared_adam_steps"] if "shared_adam_steps" in runs else pd.Series(np.nan, index=runs.index)
    # increments of the shared step count that a race overwrote (a read-modify-write of another worker)
    runs["lost_adam_steps"] = 1.0 - pd.to_numeric(adam, errors="coerce") / runs["updates"].where(runs["updates"] > 0)
    data = runs[["run_id", "config", "seed", SPEED, "final_holdout_return", "holdout_auc",
                 "overlap_fraction", "updates", "lost_adam_steps", "mean_version_gap"]].sort_values(["config", "seed"],
                                                                                        ignore_index=True)
    made = FigureData(data)
    for config, group in data.groupby("config"):
        speed = group[SPEED].median()
        made.number(macro_name("hog", config.replace("(", "").replace(")", ""), "steps"),
                    speed if np.isfinite(speed) else "not measured")
        made.number(macro_name("hog", config.replace("(", "").replace(")", ""), "final"),
                    stats.iqm(group["final_holdout_return"]), "{:.1f}")
        made.number(macro_name("hog", config, "worst"), group["final_holdout_return"].min(), "{:.1f}")
        if group["overlap_fraction"].notna().any():
            made.number(macro_name("hog", config.replace("(", "").replace(")", ""), "overlap", "max"),
                        100 * group["overlap_fraction"].max(), "{:.1f}")
            made.number(macro_name("hog", config.replace("(", "").replace(")", ""), "overlap", "min"),
                        100 * group["overlap_fraction"].min(), "{:.1f}")
    made.number("HogSeeds", int(data.groupby("config").size().min()), "{}")
    envs = set(runs["env"])
    solved = SOLVED_AT.get(envs.pop()) if len(envs) == 1 else None
    if solved is not None:  # how saturated the final return is: at the cap, ties leave P(X > Y) near 0.5
        hog = data[data["config"].str.startswith("hogwild")]
        made.number("HogSolvedAt", solved, "{:.0f}")
        made.number("HogFinalSolved", int((hog["final_holdout_return"] >= solved).sum()), "{:d}")
        made.number("HogFinalRuns", len(hog), "{:d}")
    _lock_question(made, data)
    return made


def _lock_question(made: FigureData, data: pd.DataFrame) -> None:
    """P(lock-free > locked) per metric, with its interval, and each side's IQM: the table
    `hogwild_lock` and macros HogLockPoi<Metric> (with Low, High)."""
    free, locked = data[data["config"] == "hogwild (no lock)"], data[data["config"] == "hogwild (lock)"]
    if free.empty or locked.empty:
        return
    rows = []
    for metric, vs in compare_measures(free, locked, LOCK_METRICS).items():
        x, y = free[metric].dropna().to_numpy(), locked[metric].dropna().to_numpy()
        fmt = "{:,.0f}" if metric == SPEED else "{:.1f}"
        word = verdict(vs.probability, vs.holm)
        rows.append({"metric": LOCK_METRICS[metric], "seeds (no lock, lock)": f"{len(x)}, {len(y)}",
                     "no lock IQM [95% CI]": ci(*stats.interval(x, "iqm"), fmt),
                     "lock IQM [95% CI]": ci(*stats.interval(y, "iqm"), fmt),
                     "P(no lock > lock) [95% CI]": ci(vs.probability, vs.low, vs.high, "{:.2f}"),
                     "rank test p (Holm)": f"{vs.p:.3f} ({vs.holm:.3f})", "verdict": word})
        for suffix, value in (("", vs.probability), ("low", vs.low), ("high", vs.high)):
            made.number(macro_name("hog", "lock", "poi", macro_measure(metric), *[suffix][:bool(suffix)]), value,
                        "{:.2f}")
        made.number(macro_name("hog", "lock", "p", macro_measure(metric)), vs.p, "{:.3f}")
        made.number(macro_name("hog", "lock", "holm", macro_measure(metric)), vs.holm, "{:.3f}")
        made.number(macro_name("hog", "lock", "verdict", macro_measure(metric)), word)
    lost = free["lost_adam_steps"].dropna()
    if not lost.empty:  # the worst run's lost increments, as a count of Adam steps and a share of them
        worst = lost.idxmax()
        made.number("HogLostAdamStepsMax", round(lost[worst] * free.loc[worst, "updates"]), "{:,.0f}")
        made.number("HogLostAdamStepsMaxPercent", 100 * lost[worst], "{:.3f}")
    made.table("hogwild_lock", pd.DataFrame(rows),
               "hogwild without the lock against with it (2 workers, the hogwild sweep): the probability that a "
               "lock-free run beats a locked one, per metric, with 95% stratified-bootstrap intervals; the exact "
               "rank test's p, and after Holm's correction over the table's learning comparisons; 'told apart' "
               f"only where the corrected p is below {ALPHA}")


def plot(report, made: FigureData) -> None:
    from analysis.report.framework.plotting import TEXT_WIDTH_IN, plt, sns

    data = made.data
    fig, axes = plt.subplots(1, 3, figsize=(TEXT_WIDTH_IN, 2.8))
    hog = data[data["config"].str.startswith("hogwild")]
    sns.scatterplot(data=hog, x="overlap_fraction", y="final_holdout_return", hue="config", ax=axes[0])
    axes[0].set_xlabel("overlapping optimizer steps (share)")
    axes[0].set_ylabel("final holdout return")
    axes[0].set_title("overlaps against final return")
    if data[SPEED].notna().any():
        sns.stripplot(data=data, x="config", y=SPEED, ax=axes[1])
        axes[1].set_ylabel("env steps/s once learning")
        axes[1].set_title("throughput, runs made alone")
    else:  # runs made several at once: no speed to show, the early learning instead
        sns.stripplot(data=data, x="config", y="holdout_auc", ax=axes[1])
        axes[1].set_ylabel("mean holdout return")
        axes[1].set_title("mean holdout over checkpoints")
    axes[2].set_ylabel("final holdout return")
    axes[2].set_title("final return (cap: 500)")
    sns.stripplot(data=data, x="config", y="final_holdout_return", ax=axes[2])
    for ax in axes[1:]:
        ax.set_xlabel("")
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    axes[0].legend(title=None)
    fig.tight_layout()
    report.figure(fig, "hogwild", data)
