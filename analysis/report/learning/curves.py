"""3 and 4: the headline comparison of architectures at equal env steps (the `architectures`
sweep, or another sweep of training runs): learning curves, and speed against quality with its
table; and the helpers that select and pool those runs, which figure 9 (improvement.py) and the
headline's tables (headline_tables.py) share."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from analysis import stats
from analysis.io.load import LEARNING_RATE, RunSet
from analysis.report.framework.claims import SOLVED_AT
from analysis.report.framework.common import (ARCH_ORDER, FigureData, Note, arch_label, ci, headline, regular_curves, diverged,
                                              diverged_line, headline_runs, holdout_auc, macro_name, made_alone, runs_read,
                                              speeds_only_where_made_alone)


def _note_pooled(note: Note, runs: pd.DataFrame, figure: str) -> None:
    """The headline figures pool a design's runs; say so where they differ in config."""
    labels = runs.apply(arch_label, axis=1) if not runs.empty else pd.Series(dtype=str)
    for (env, arch), group in labels.groupby([runs["env"], runs["design"]]):
        if group.nunique() > 1:
            note(f"{figure}: {env} {arch} pools runs of {group.nunique()} configs "
                 f"({', '.join(sorted(group.unique()))}); run one config per design to separate them")


SPEED = LEARNING_RATE
"""A design's speed in the headline: env steps/s once learning has started (analysis.io.load.learning_rate),
the rate its long runs see; a short scaling run's whole-run rate averages a fast warm-up in."""


def headline_rows(rs: RunSet) -> pd.DataFrame:
    """The headline runs, their mean holdout over checkpoints, and their speed only where it is a
    measurement: a run a sweep made beside others (`--jobs N`, `runs_at_once` N > 1) shared the
    CPU, so its env steps/s is NaN here (runs older than that field count as made alone)."""
    runs = speeds_only_where_made_alone(headline(rs.runs))
    runs["holdout_auc"] = holdout_auc(rs.holdout, runs["run_id"])
    return runs


def slug(env: str) -> str:
    """An env's name as a table file name takes it: 'CartPole' -> 'cartpole'."""
    return re.sub(r"[^a-z0-9]+", "_", env.lower())


AUC_FORMAT = {"CartPole": "{:.0f}"}
"""How the macros <Env><Design>Auc are written: returns in the hundreds need no decimal (others {:.1f})."""


def solo_runs(rs: RunSet, env: str, arch: str) -> pd.DataFrame:
    """The `scaling` sweep's runs of this design on `env` with no added env cost, made one at a time
    (evaluation off): the speeds the report quotes where a design's own runs shared the CPU
    (solo_speeds; pqn.speed_check_data)."""
    runs = rs.runs
    return runs[(runs["sweep"] == "scaling") & (runs["env"] == env) & (runs["design"] == arch)
                & (pd.to_numeric(runs["env_step_cost_us"]).fillna(0) == 0) & made_alone(runs)]


def solo_speeds(rs: RunSet, env: str, arch: str, workers: int, utd: float) -> np.ndarray:
    """env steps/s once learning (SPEED) of solo_runs at this worker count and utd. Where the headline
    runs shared the CPU, their speed is quoted from these (the same config but for the budget and
    evaluation; tests/test_report_data.py::test_headline_speeds_leave_the_warm_up_out)."""
    runs = solo_runs(rs, env, arch)
    pick = runs[(runs["num_workers"] == workers) & np.isclose(runs["utd"], utd)]
    return pick[SPEED].dropna().to_numpy(dtype=float)


def measured_speeds(rs: RunSet, group: pd.DataFrame) -> tuple[np.ndarray, str]:
    """One design's env steps/s measurements and where they come from: its own runs where they were
    made alone, else the scaling sweep's one-at-a-time runs of it (solo_speeds), else none."""
    speeds = group[SPEED].dropna().to_numpy(dtype=float)
    if len(speeds):
        return speeds, "these runs"
    first = group.iloc[0]
    speeds = solo_speeds(rs, first["env"], first["design"], int(first["num_workers"]), float(first["utd"]))
    return speeds, f"scaling sweep, {len(speeds)} runs" if len(speeds) else "not measured"


# ---------------------------------------------------------------------- 3. learning curves
def curves_data(rs: RunSet, note: Note) -> FigureData | None:
    holdout = rs.holdout[rs.holdout["run_id"].isin(headline(rs.runs)["run_id"])]
    _note_pooled(note, headline(rs.runs), "learning curves")
    if holdout.empty:
        note("learning curves: no holdout checkpoints from the `architectures` sweep (or another sweep "
             "of training runs); run `python -m experiments.sweep architectures`")
        return None
    holdout = regular_curves(note, holdout, "learning curves")
    runs = rs.runs.set_index("run_id")
    missing_time = holdout["train_seconds"].isna()
    if missing_time.any():
        # Older runs did not record training seconds per checkpoint: assume a steady rate. The whole-run
        # rate is the subject here, not a speed quoted: env steps over it give back the run's training seconds.
        rate = holdout.loc[missing_time, "run_id"].map(runs["env_steps_per_sec"])
        holdout.loc[missing_time, "train_seconds"] = holdout.loc[missing_time, "env_step"] / rate
        note(f"learning curves: {holdout.loc[missing_time, 'run_id'].nunique()} runs lack training seconds "
             "per checkpoint; their wall-clock axis assumes a steady rate")
    holdout = _solo_clock(note, rs, holdout)
    rows = []
    for (env, arch), group in holdout.groupby(["env", "design"], sort=True):
        for step, at in group.groupby("env_step"):
            point, low, high = stats.interval(at["return_mean"].to_numpy(), "iqm")
            rows.append({"env": env, "design": arch, "env_step": int(step), "seeds": len(at),
                         "train_seconds_median": float(at["train_seconds"].median()),
                         "return_iqm": point, "return_low": low, "return_high": high})
    made = FigureData(pd.DataFrame(rows))
    made.parts["read"] = runs_read(rs.runs[rs.runs["run_id"].isin(holdout["run_id"])])
    made.number("CurvesRead", made.parts["read"])  # the paper's caption names the runs it drew
    catch_up(made)
    return made


def _solo_clock(note: Note, rs: RunSet, holdout: pd.DataFrame) -> pd.DataFrame:
    """A run made beside others (`--jobs N`) took longer than it would alone, and the designs with
    more processes lost more to sharing: its wall-clock axis is instead its env steps over the
    design's one-at-a-time speed (solo_speeds, the scaling sweep's median), where there is one; where
    there is none, the run is left off that axis rather than drawn on the shared machine's clock
    (tests/test_report_data.py::test_speeds_of_runs_made_several_at_once_are_never_quoted)."""
    runs = rs.runs[rs.runs["run_id"].isin(holdout["run_id"])]
    holdout = holdout.copy()
    for (env, arch, workers, utd), cell in runs[~made_alone(runs)].groupby(["env", "design", "num_workers",
                                                                            "utd"]):
        speeds = solo_speeds(rs, env, arch, int(workers), float(utd))
        at = holdout["run_id"].isin(cell["run_id"])
        if not len(speeds):
            note(f"learning curves: {env} {arch} ({int(workers)})'s runs were made several at a time and no run of "
                 "that cell alone; left off the wall-clock axis")
            holdout.loc[at, "train_seconds"] = np.nan
            continue
        holdout.loc[at, "train_seconds"] = holdout.loc[at, "env_step"] / float(np.median(speeds))
    return holdout


def speed_quality_data(rs: RunSet, note: Note) -> FigureData | None:
    runs = headline_rows(rs)
    if runs.empty:
        note("speed against quality: no runs of the `architectures` sweep (or another sweep of "
             "training runs)")
        return None
    _note_pooled(note, runs, "speed against quality")
    rows = []
    for (env, arch), group in runs.groupby(["env", "design"], sort=True):
        speeds, source = measured_speeds(rs, group)
        if source != "these runs":
            note(f"speed against quality: {env} {arch}'s runs were made several at a time; its speed is "
                 + (f"the scaling sweep's ({len(speeds)} runs, one at a time)" if len(speeds) else "not measured"))
        speed = stats.interval(speeds, "median") if len(speeds) else (np.nan,) * 3
        final = stats.interval(group["final_holdout_return"].to_numpy(), "iqm")
        area = stats.interval(group["holdout_auc"].dropna().to_numpy(), "iqm") if group["holdout_auc"].notna().any() \
            else (np.nan,) * 3
        rows.append({"env": env, "design": arch, "label": arch_label(group.iloc[0]), "seeds": len(group),
                     "solved": int((group["final_holdout_return"] >= SOLVED_AT[env]).sum()) if env in SOLVED_AT
                     else np.nan, "speed_from": source,
                     "steps_per_sec_median": speed[0], "steps_per_sec_low": speed[1], "steps_per_sec_high": speed[2],
                     "final_return_iqm": final[0], "final_return_low": final[1], "final_return_high": final[2],
                     "auc_iqm": area[0], "auc_low": area[1], "auc_high": area[2]})
    data = pd.DataFrame(rows)
    data["non_dominated"] = [
        not any((o["steps_per_sec_median"] >= r["steps_per_sec_median"] and o["auc_iqm"] >= r["auc_iqm"])
                and (o["steps_per_sec_median"] > r["steps_per_sec_median"] or o["auc_iqm"] > r["auc_iqm"])
                for _, o in data[data["env"] == r["env"]].iterrows())
        for _, r in data.iterrows()]
    made = FigureData(data)
    table = pd.DataFrame({
        "env": data["env"], "design": data["label"], "seeds": data["seeds"],
        "env steps/s, median [95% CI]": [ci(r.steps_per_sec_median, r.steps_per_sec_low, r.steps_per_sec_high)
                                         for r in data.itertuples()],
        "speed from": data["speed_from"],
        "final holdout return, IQM [95% CI]": [ci(r.final_return_iqm, r.final_return_low, r.final_return_high,
                                                   "{:.1f}") for r in data.itertuples()],
        "mean holdout return over checkpoints, IQM [95% CI]": [ci(r.auc_iqm, r.auc_low, r.auc_high, "{:.1f}")
                                                               for r in data.itertuples()],
        "seeds solved": [f"{r.solved:.0f} (>= {SOLVED_AT[r.env]:.0f})" if r.env in SOLVED_AT else "-"
                         for r in data.itertuples()]})
    caption = ("Throughput and holdout return per design ({}); intervals are stratified-bootstrap 95% CIs "
               f"over seeds. {speeds_from(data)}.")
    table, caption = _count_diverged(note, rs, data, table, caption)
    made.table("architectures", table, caption.format(runs_read(runs)))
    if data["env"].nunique() > 1:  # and one table per env, e.g. architectures_breakout for the minatar sweep
        for env in data["env"].unique():
            made.table(f"architectures_{slug(env)}", table[table["env"] == env].drop(columns="env"),
                       caption.format(f"{env}, {runs_read(runs[runs['env'] == env])}"))
    made.parts["read"] = f"{runs_read(runs)}. {speeds_from(data)}"
    for r in data.itertuples():
        made.number(macro_name(r.env, r.design, "steps"),
                    r.steps_per_sec_median if np.isfinite(r.steps_per_sec_median) else "not measured")
        base = data.loc[(data["env"] == r.env) & (data["design"] == "single_env"), "steps_per_sec_median"]
        ratio = r.steps_per_sec_median / base.iloc[0] if len(base) else np.nan
        if r.design != "single_env" and np.isfinite(ratio):
            made.number(macro_name(r.env, r.design, "speedup"), ratio, "{:.2f}" if ratio >= 0.1 else "{:.2g}")
        made.number(macro_name(r.env, r.design, "final"), r.final_return_iqm, "{:.1f}")
        made.number(macro_name(r.env, r.design, "auc"), r.auc_iqm, AUC_FORMAT.get(r.env, "{:.1f}"))
        made.number(macro_name(r.env, r.design, "seeds"), r.seeds, "{}")
        if r.env in SOLVED_AT:
            made.number(macro_name(r.env, r.design, "solved"), r.solved, "{:.0f}")
    window_check_numbers(made, data["env"])
    return made


def speeds_from(data: pd.DataFrame) -> str:
    """Where the speeds of speed_quality's rows come from, in a sentence: the runs themselves, the
    scaling sweep's runs made alone, or each where it was (the table's `speed from`). The sweep's
    summary counts a run's speed over the whole run; these are counted once learning has started."""
    froms = set(data["speed_from"])
    kind = "Speeds are env steps/s once learning has started (a sweep's summary counts the whole run)"
    if froms <= {"these runs", "not measured"}:
        said = f"{kind}, of these runs, each made one at a time"
    elif "these runs" not in froms:
        said = f"{kind}, of the scaling sweep's runs of each design made one at a time (these runs shared the CPU)"
    else:
        said = f"{kind}, of these runs where they were made one at a time, else of the scaling sweep's ('speed from')"
    return said + ("; a design with no run made alone has none" if "not measured" in froms else "")


DIVERGED_COLUMN = "diverged, left out"


def _count_diverged(note: Note, rs: RunSet, data: pd.DataFrame, table: pd.DataFrame,
                    caption: str) -> tuple[pd.DataFrame, str]:
    """Where a headline run diverged, the table counts them per design (`diverged, left out`:
    `1 of 10`; its seeds and intervals are the other runs'), a design whose every run diverged
    keeps a row of dashes, and a note names them. Where none did, the table is as it was."""
    line = diverged_line(rs.runs)
    if line is None:
        return table, caption
    note(f"speed against quality: {line}")
    every = headline_runs(rs.runs)
    every = every.assign(out=diverged(every), label=every.apply(arch_label, axis=1))
    counts = every.groupby(["env", "design"], sort=True).agg(runs=("out", "size"), out=("out", "sum"),
                                                                   label=("label", "first"))
    shown = list(zip(data["env"], data["design"]))
    table = table.assign(**{DIVERGED_COLUMN: [f"{counts.loc[k, 'out']} of {counts.loc[k, 'runs']}" for k in shown]})
    gone = [{**dict.fromkeys(table.columns, "-"), "env": key[0], "design": c.label, "seeds": 0,
             DIVERGED_COLUMN: f"{c.out} of {c.runs}"} for key, c in counts.iterrows() if key not in shown]
    if gone:  # in the order of the other rows: by env, then design
        keys = shown + [k for k in counts.index if k not in shown]
        table = pd.concat([table, pd.DataFrame(gone)], ignore_index=True)
        table = table.iloc[sorted(range(len(table)), key=keys.__getitem__)].reset_index(drop=True)
    return table, caption + " Runs that diverged are left out of the intervals and counted in the last column."


from analysis.report.learning.window_check import catch_up, window_check_numbers, window_check  # noqa: E402,F401


def plot_curves(report, made: FigureData) -> None:
    """Return against env steps, one panel an env, a marker and a colour a design. The synthetic
    clock (env steps over a speed measured elsewhere) is left to the CSV: no run timed it."""
    from analysis.report.framework.plotting import MARKERS, PALETTE, TEXT_WIDTH_IN, plt

    data = made.data
    envs = sorted(data["env"].unique())
    fig, axes = plt.subplots(1, len(envs), figsize=(TEXT_WIDTH_IN, 2.6), squeeze=False)
    for ax, env in zip(axes[0], envs):
        for arch in ARCH_ORDER:
            sub = data[(data["env"] == env) & (data["design"] == arch)].dropna(subset=["env_step"])
            if sub.empty:
                continue
            ax.plot(sub["env_step"], sub["return_iqm"], color=PALETTE[arch], label=arch, marker=MARKERS[arch], ms=3)
            ax.fill_between(sub["env_step"], sub["return_low"], sub["return_high"], color=PALETTE[arch], alpha=0.15)
        ax.set_xlabel("env steps")
        ax.set_ylabel("holdout return (IQM, 95% CI)")
        ax.set_title(env)
        ax.legend(ncol=2)
    fig.tight_layout()
    report.figure(fig, "learning_curves", data, read=made.parts.get("read", ""))


def plot_speed_quality(report, made: FigureData) -> None:
    from analysis.report.framework.plotting import PALETTE, log_axis, plt

    data = made.data
    envs = sorted(data["env"].unique())
    fig, axes = plt.subplots(1, len(envs), figsize=(3.4 * len(envs), 2.8), squeeze=False)
    for ax, env in zip(axes[0], envs):
        part = data[(data["env"] == env) & data["steps_per_sec_median"].notna()]  # no speed alone: no point
        for _, r in part.iterrows():
            ax.errorbar(r["steps_per_sec_median"], r["auc_iqm"],
                        xerr=[[r["steps_per_sec_median"] - r["steps_per_sec_low"]],
                              [r["steps_per_sec_high"] - r["steps_per_sec_median"]]],
                        yerr=[[r["auc_iqm"] - r["auc_low"]], [r["auc_high"] - r["auc_iqm"]]],
                        fmt="o", capsize=3, color=PALETTE.get(r["design"]), label=r["label"])
        frontier = part[part["non_dominated"]].sort_values("steps_per_sec_median")
        ax.plot(frontier["steps_per_sec_median"], frontier["auc_iqm"], "k--", lw=1,
                label="frontier of the point estimates (not a test)")
        log_axis(ax, "x")
        ax.set_xlabel("env steps/s (median over seeds, 95% CI; log scale)")
        ax.set_ylabel("mean holdout return over checkpoints\n(IQM over seeds, 95% CI)")
        ax.set_title(env)
        ax.legend()
    report.figure(fig, "speed_quality", data, read=made.parts.get("read", ""))
