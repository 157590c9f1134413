"""10. uneven workers (the `uneven` sweep): one slow worker (worker 0, `slow_worker_cost_us` more
per env step) among two, the reporting user's worry that "processes with short episodes finish
first and rush to update, while long-episode experience gets ignored". Per design: throughput
(env steps/s once learning starts, SPEED), the slow worker's share of the env steps, of the replay
and of the sampled batches, how old the acting weights were when each actor's transitions reached
the learner, and learning at equal env steps; for actor_learner, equal per-checkpoint quotas
against free-running actors as in Ape-X, with P(free > equal), its interval, the exact rank
test's p, Holm's and the verdict (macros UnevenFree*: the text quotes them; the table `uneven`
compares each design with single_env)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import stats
from analysis.io.load import RunSet
from analysis.report.framework.claims import compare_measures, macro_measure, verdict
from analysis.report.framework.common import (SPEED, FigureData, Note, arch_label, ci, regular_curves, sweep_runs, holdout_auc,
                                              macro_name, speed_missing, speeds_only_where_made_alone)

SHARE_KINDS = ("env_steps", "replay", "sampled")
"""Worker 0's share of each, times the worker count (1 = an equal share)."""
QUOTA_METRICS = {SPEED: "env steps/s once learning", "final_holdout_return": "final holdout return",
                 "holdout_auc": "mean holdout over checkpoints"}
TARGET_HALF_WIDTH = 0.2
"""An interval on P(free > equal) this narrow (+-) would tell a modest difference: the seeds it would
take are estimated from the measured interval's half width, which shrinks as 1 / sqrt(seeds)."""


def config_label(row) -> str:
    """actor_learner's rows name their quota rule; the others are labelled as in the headline."""
    label = arch_label(row)  # "actor_learner (2)", or "actor_learner (2) [with ...]" under a sweep's overrides
    if row["design"] == "actor_learner" and isinstance(row.get("actor_quotas"), str):
        head = f"actor_learner ({int(row['num_workers'])})"
        label = label.replace(head, f"actor_learner ({int(row['num_workers'])}, {row['actor_quotas']} quotas)", 1)
    return label


def _slow_share(result: dict, kind: str) -> float:
    values = (result.get("worker_shares") or {}).get(kind)
    return float(values[0] * len(values)) if values and len(values) > 1 else np.nan


def _staleness(result: dict, which: str) -> float:
    """Mean age of the acting weights at hand-off (learner updates), of worker 0 or of the others."""
    values = result.get("worker_acting_staleness_mean")
    if not values or len(values) < 2:
        return np.nan
    return float(values[0]) if which == "slow" else float(np.mean(values[1:]))


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = sweep_runs(rs.runs, "uneven").copy()
    if runs.empty:
        note("uneven workers: no runs of the `uneven` sweep; run `python -m experiments.sweep uneven --jobs 1`")
        return None
    runs["config"] = runs.apply(config_label, axis=1)
    runs["holdout_auc"] = holdout_auc(rs.holdout, runs["run_id"])
    runs = speeds_only_where_made_alone(runs)
    speed_missing(runs, note, "uneven workers")  # named; its learning is still compared
    for kind in SHARE_KINDS:
        runs[f"slow_share_{kind}"] = runs["result"].apply(_slow_share, kind=kind)
    for which in ("slow", "fast"):
        runs[f"staleness_{which}"] = runs["result"].apply(_staleness, which=which)
    columns = ["run_id", "config", "design", "seed", SPEED, "final_holdout_return", "holdout_auc",
               *[f"slow_share_{k}" for k in SHARE_KINDS], "staleness_slow", "staleness_fast"]
    table = runs[columns].sort_values(["config", "seed"], ignore_index=True)
    curves = _curves(note, rs, runs)
    made = FigureData(table, parts={"curves": curves})
    _table(made, table)
    # how the sweep ran, from its runs' stored configs: the slow worker's extra cost, the budget, the seeds
    slow = pd.to_numeric(runs["slow_worker_cost_us"], errors="coerce").max()
    if np.isfinite(slow) and slow > 0:
        made.number("UnevenSlowMs", slow / 1000, "{:g}")
    budgets = pd.to_numeric(runs["total_env_steps"], errors="coerce").dropna()
    if not budgets.empty:
        made.number("UnevenBudget", float(budgets.mode().iloc[0]))
    made.number("UnevenSeedsFirst", int(runs["seed"].min()), "{:d}")
    made.number("UnevenSeedsLast", int(runs["seed"].max()), "{:d}")
    return made


def _curves(note: Note, rs: RunSet, runs: pd.DataFrame) -> pd.DataFrame:
    holdout = regular_curves(note, rs.holdout[rs.holdout["run_id"].isin(runs["run_id"])], "uneven workers")
    holdout = holdout.assign(config=holdout["run_id"].map(runs.set_index("run_id")["config"]))
    rows = []
    for (config, step), at in holdout.groupby(["config", "env_step"], sort=True):
        point, low, high = stats.interval(at["return_mean"].to_numpy(), "iqm")
        rows.append({"config": config, "env_step": int(step), "seeds": len(at), "return_iqm": point,
                     "return_low": low, "return_high": high})
    return pd.DataFrame(rows)


def _table(made: FigureData, data: pd.DataFrame) -> None:
    base = data[data["config"] == "single_env"]
    against = {config: stats.compare(group["holdout_auc"].dropna().to_numpy(), base["holdout_auc"].dropna().to_numpy())
               for config, group in data.groupby("config", sort=True) if config != "single_env" and not base.empty}
    against = dict(zip(against, stats.with_holm(list(against.values()))))  # Holm over the table's comparisons
    rows = []
    for config, group in data.groupby("config", sort=True):
        speeds = group[SPEED].dropna().to_numpy()
        speed = stats.interval(speeds, "median") if len(speeds) else (np.nan,) * 3
        final = stats.interval(group["final_holdout_return"].to_numpy(), "iqm")
        area = stats.interval(group["holdout_auc"].dropna().to_numpy(), "iqm")
        shares = {k: group[f"slow_share_{k}"].median() for k in SHARE_KINDS}
        row = {"design": config, "seeds": len(group),
               "env steps/s once learning [95% CI]": ci(*speed) if len(speeds) else "not measured",
               **{f"slow share, {k.replace('_', ' ')}": f"{v:.2f}" if np.isfinite(v) else "-"
                  for k, v in shares.items()},
               "weight age, slow / fast": (
                   f"{group['staleness_slow'].median():.1f} / {group['staleness_fast'].median():.1f}"
                   if group["staleness_slow"].notna().any() else "-"),
               "final, IQM [95% CI]": ci(*final, "{:.1f}"),
               "mean over checkpoints, IQM [95% CI]": ci(*area, "{:.1f}")}
        vs = against.get(config)
        row["P(> single_env), mean [95% CI]"] = ci(vs.probability, vs.low, vs.high, "{:.2f}") if vs else "-"
        row["Holm p"] = f"{vs.holm:.3f}" if vs else "-"
        if vs:
            made.number(macro_name("uneven", config, "poi", "auc"), vs.probability, "{:.2f}")
            made.number(macro_name("uneven", config, "holm", "auc"), vs.holm, "{:.3f}")
        rows.append(row)
        name = macro_name("uneven", config)
        made.number(name + "Steps", speed[0] if np.isfinite(speed[0]) else "not measured")
        made.number(name + "Final", final[0], "{:.1f}")
        made.number(name + "Auc", area[0], "{:.1f}")
        made.number(name + "Seeds", len(group), "{}")
        for kind, value in shares.items():
            if np.isfinite(value):
                made.number(name + macro_name("slow", "share", kind), value, "{:.2f}")
        for which in ("slow", "fast"):
            value = group[f"staleness_{which}"].median()
            if np.isfinite(value):
                made.number(name + macro_name("staleness", which), value, "{:.1f}")
    made.table("uneven", pd.DataFrame(rows),
               "One slow worker among two (the uneven sweep, CartPole, worker 0 +1 ms per env step, runs one at a "
               "time): throughput (env steps/s once learning starts, median), the slow worker's share of the env "
               "steps, the replay and the sampled batches (times two: 1 is an equal share), the acting weights' age "
               "in learner updates at hand-off, and holdout return at equal env steps; intervals are "
               "stratified-bootstrap 95% CIs; against single_env, the exact rank test's p after Holm's correction "
               "over the table's comparisons.")
    _quota_question(made, data)


def _quota_question(made: FigureData, data: pd.DataFrame) -> None:
    """P(free-running > equal quotas) for actor_learner, per metric, with the exact rank test's p
    (Holm over the learning measures): macros UnevenFreePoi<Metric>, UnevenFreeP/Holm/Verdict<Metric>."""
    free = data[(data["design"] == "actor_learner") & data["config"].str.contains("free quotas")]
    equal = data[(data["design"] == "actor_learner") & data["config"].str.contains("equal quotas")]
    if free.empty or equal.empty:
        return
    for metric, vs in compare_measures(free, equal, QUOTA_METRICS).items():
        for suffix, value in (("", vs.probability), ("Low", vs.low), ("High", vs.high)):
            made.number(macro_name("uneven", "free", "poi", macro_measure(metric)) + suffix, value, "{:.2f}")
        made.number(macro_name("uneven", "free", "p", macro_measure(metric)), vs.p, "{:.3f}")
        made.number(macro_name("uneven", "free", "holm", macro_measure(metric)), vs.holm, "{:.3f}")
        made.number(macro_name("uneven", "free", "verdict", macro_measure(metric)), verdict(vs.probability, vs.holm))
        if metric == "holdout_auc" and vs.high > vs.low:  # seeds a side for +-TARGET_HALF_WIDTH, as 1 / sqrt(n)
            x, y = free[metric].dropna(), equal[metric].dropna()
            made.number("UnevenTargetHalfWidth", TARGET_HALF_WIDTH, "{:g}")
            made.number("UnevenFreePoiHoldoutAucSeedsForTarget",
                        min(len(x), len(y)) * ((vs.high - vs.low) / 2 / TARGET_HALF_WIDTH) ** 2, "{:.0f}")


def plot(report, made: FigureData) -> None:
    from analysis.report.framework.plotting import PALETTE, TEXT_WIDTH_IN, plt, sns

    data, curves = made.data, made.parts["curves"]
    order = sorted(data["config"].unique())
    colors = {c: PALETTE.get(data.loc[data["config"] == c, "design"].iloc[0]) for c in order}
    fig, grid = plt.subplots(2, 2, figsize=(TEXT_WIDTH_IN, 5.4))
    axes = grid.ravel()
    ax = axes[0]
    sns.stripplot(data=data, x="config", y=SPEED, order=order, hue="config", palette=colors,
                  legend=False, ax=ax, size=4)
    ax.set_title("throughput (one run at a time)")
    ax.set_ylabel("env steps/s once learning")
    ax = axes[1]
    shares = data.melt(id_vars=["config"], value_vars=[f"slow_share_{k}" for k in SHARE_KINDS],
                       var_name="kind", value_name="share").dropna()
    shares["kind"] = shares["kind"].str.replace("slow_share_", "", regex=False)
    sns.stripplot(data=shares, x="config", y="share", hue="kind", order=order, hue_order=list(SHARE_KINDS),
                  dodge=True, ax=ax, size=3, palette="Greys_r")
    ax.axhline(1.0, color="k", ls="--", lw=1)
    ax.set_ylim(0, None)
    ax.set_title("slow worker's share x 2 (1 = an equal share)")
    ax.set_ylabel("share x workers")
    ax = axes[2]
    ages = data.melt(id_vars=["config"], value_vars=["staleness_slow", "staleness_fast"], var_name="worker",
                     value_name="updates").dropna()
    ages["worker"] = ages["worker"].map({"staleness_slow": "slow (0)", "staleness_fast": "fast (1)"})
    age_order = [c for c in order if c in set(ages["config"])]
    if not ages.empty:
        sns.stripplot(data=ages, x="config", y="updates", hue="worker", order=age_order, dodge=True, ax=ax, size=3, palette="Greys_r")
    ax.set_title("acting weights' age at hand-off, per actor")
    ax.set_ylabel("learner updates behind")
    for ax, ticks in zip(axes[:3], (order, order, age_order if not ages.empty else [])):
        ax.set_xlabel("")
        # the workers on a second line and each label's end at its tick: a long label slanted
        # from its centre ran off the figure and under the neighbouring panel
        ax.set_xticks(range(len(ticks)), [c.replace(" (", "\n(", 1) for c in ticks], fontsize=7, rotation=30,
                      ha="right", rotation_mode="anchor")
    ax = axes[3]
    for config in order:
        sub = curves[curves["config"] == config]
        ax.plot(sub["env_step"], sub["return_iqm"], marker="o", ms=3, label=config, color=colors[config],
                ls="--" if "equal quotas" in config else "-")
        ax.fill_between(sub["env_step"], sub["return_low"], sub["return_high"], alpha=0.12, color=colors[config])
    ax.set_xlabel("env steps")
    ax.set_ylabel("holdout return (IQM, 95% CI)")
    ax.set_title("learning at equal env steps")
    # the key under the axes: inside, it covered the curves and their bands
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False)
    fig.tight_layout()
    report.figure(fig, "uneven", made.data)
