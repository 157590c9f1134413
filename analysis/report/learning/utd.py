"""7. high_utd grid: holdout return and divergence per utd and mitigation (the `utd` sweep), and
single_env against every cell run with as many seeds, at the same checkpoints."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from analysis import stats
from analysis.io.load import RunSet
from analysis.report.framework.claims import ALPHA, CAP, SOLVED_AT, after_solving, verdict
from analysis.report.framework.common import FigureData, Note, ci, sweep_runs, holdout_auc, macro_name

MITIGATIONS = ["none", "LayerNorm", "resets", "both"]
EARLY_STEP = 25_000
"""The early checkpoint (env steps) at which the grid and the comparison with single_env read the
return: sample efficiency, before most cells reach the cap (UtdEarlyStep)."""


def _mitigation(row) -> str:
    ln, resets = bool(row["layer_norm"]), int(row["reset_period"] or 0) > 0
    return {(False, False): "none", (True, False): "LayerNorm", (False, True): "resets", (True, True): "both"}[
        (ln, resets)]


def _budgets(runs: pd.DataFrame) -> pd.Series:
    return pd.to_numeric(runs["total_env_steps"], errors="coerce")


def _grid_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The grid: the sweep's runs at its smallest budget (the long cells, at more, are _long_runs)."""
    return runs[_budgets(runs) == _budgets(runs).min()] if not runs.empty else runs


def _long_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The long cells: the sweep's runs past the grid's budget (long_data)."""
    return runs[_budgets(runs) > _budgets(runs).min()] if not runs.empty else runs


def data(rs: RunSet, note: Note) -> FigureData | None:
    """utd_grid.csv; in parts `single`, the sweep's single_env runs the figure's title quotes."""
    runs = _grid_runs(sweep_runs(rs.runs, "utd"))
    grid = runs[runs["design"] == "high_utd"].copy()
    if grid.empty:
        note("utd grid: no runs of the `utd` sweep; run `python -m experiments.sweep utd`")
        return None
    grid["mitigation"] = grid.apply(_mitigation, axis=1)
    at25 = rs.holdout[(rs.holdout["env_step"] == EARLY_STEP)].set_index("run_id")["return_mean"]
    grid["return_25k"] = grid["run_id"].map(at25)
    rows = []
    for (utd, mitigation), group in grid.groupby(["utd", "mitigation"], sort=True):
        final = stats.interval(group["final_holdout_return"].to_numpy(), "iqm")
        early = stats.interval(group["return_25k"].dropna().to_numpy(), "iqm") if group["return_25k"].notna().any() \
            else (np.nan,) * 3
        diverged = group["diverged"].fillna(False).astype(bool)
        rows.append({"utd": utd, "mitigation": mitigation, "seeds": len(group),
                     "final_iqm": final[0], "final_low": final[1], "final_high": final[2],
                     "return_25k_iqm": early[0], "return_25k_low": early[1], "return_25k_high": early[2],
                     "diverged_runs": int(diverged.sum()), "divergence_rate": float(diverged.mean()),
                     "max_abs_q_median": float(group["max_abs_q"].median())})
    data = pd.DataFrame(rows)
    data["mitigation"] = pd.Categorical(data["mitigation"], MITIGATIONS, ordered=True)
    data = data.sort_values(["utd", "mitigation"], ignore_index=True)
    single = runs[runs["design"] == "single_env"]
    made = FigureData(data, parts={"single": single})
    table = pd.DataFrame({
        "utd": data["utd"].map("{:g}".format), "mitigation": data["mitigation"].astype(str), "seeds": data["seeds"],
        "return at 25k, IQM [95% CI]": [ci(r.return_25k_iqm, r.return_25k_low, r.return_25k_high, "{:.0f}")
                                        for r in data.itertuples()],
        "final return (50k), IQM [95% CI]": [ci(r.final_iqm, r.final_low, r.final_high, "{:.0f}")
                                             for r in data.itertuples()],
        "diverged": [f"{r.diverged_runs}/{r.seeds}" for r in data.itertuples()],
        "max |Q|, median": data["max_abs_q_median"].map("{:,.0f}".format)})
    made.table("utd_grid", table, "high_utd on CartPole: holdout return and divergence per utd and mitigation.")
    for r in data.itertuples():
        made.number(macro_name("utd", r.utd, r.mitigation, "final"), r.final_iqm, "{:.0f}")
        made.number(macro_name("utd", r.utd, r.mitigation, "early"), r.return_25k_iqm, "{:.0f}")
        made.number(macro_name("utd", r.utd, r.mitigation, "diverged"), f"{r.diverged_runs}/{r.seeds}")
        made.number(macro_name("utd", r.utd, r.mitigation, "maxq"), r.max_abs_q_median)
    made.number("UtdSeeds", int(data["seeds"].min()), "{}")
    # how the sweep ran, from its runs' stored configs: the early checkpoint, the budget, the holdout
    # period, the seeds, the return scale 1 / (1 - gamma) that max |Q| is read against, and the
    # reset period in env steps (reset_period counts updates: utd times as many)
    made.number("UtdEarlyStep", EARLY_STEP)
    for name, column in (("UtdBudget", "total_env_steps"), ("UtdEvalEvery", "eval_every")):
        values = pd.to_numeric(grid[column], errors="coerce").dropna()
        if not values.empty:
            made.number(name, float(values.mode().iloc[0]))
    common = set.intersection(*(set(group["seed"]) for _, group in grid.groupby(["utd", "mitigation"])))
    if common:  # the seeds every cell has (the comparison cells have more: UtdVsSeedsLast)
        made.number("UtdSeedsFirst", int(min(common)), "{:d}")
        made.number("UtdSeedsLast", int(max(common)), "{:d}")
    gamma = grid["config"].map(lambda c: c.get("gamma")).dropna()
    if not gamma.empty:
        made.number("UtdReturnScale", 1 / (1 - float(gamma.mode().iloc[0])), "{:.0f}")
    reset_env_steps = _reset_env_steps(grid)
    if np.isfinite(reset_env_steps):
        made.number("UtdResetEnvSteps", reset_env_steps)
    if not single.empty:
        _utd_against_single(made, rs, runs, grid)
    return made


def _utd_against_single(made: FigureData, rs: RunSet, runs: pd.DataFrame, grid: pd.DataFrame) -> None:
    """single_env against every utd cell run with as many seeds, at the same checkpoints, with the
    probability that a cell's run beats a single_env run at 25k and on the mean holdout return over
    checkpoints (the sample-efficiency claim; tests/test_report_data.py::test_utd_grid_and_the_cells_against_single_env)."""
    single = runs[runs["design"] == "single_env"].copy()
    single["mitigation"], single["return_25k"] = "-", single["run_id"].map(
        rs.holdout[rs.holdout["env_step"] == EARLY_STEP].set_index("run_id")["return_mean"])
    grid = grid.assign(holdout_auc=holdout_auc(rs.holdout, grid["run_id"]).to_numpy())
    single["holdout_auc"] = holdout_auc(rs.holdout, single["run_id"]).to_numpy()
    n = len(single)
    cells = [("single_env", single["utd"].iloc[0], "-", single)]
    for (utd, mitigation), group in grid.groupby(["utd", "mitigation"], sort=True):
        if len(group) >= n:
            cells.append(("high_utd", utd, mitigation, group))
    rows = []
    for arch, utd, mitigation, group in cells:
        group = group.sort_values("seed")
        early = stats.interval(group["return_25k"].to_numpy(), "iqm")
        final = stats.interval(group["final_holdout_return"].to_numpy(), "iqm")
        rows.append({"design": arch, "utd": f"{utd:g}", "mitigation": mitigation, "seeds": len(group),
                     "return at 25k, IQM [95% CI]": ci(*early, "{:.0f}"),
                     "final (50k), IQM [95% CI]": ci(*final, "{:.0f}"),
                     "final (50k), per seed": ", ".join(f"{v:.0f}" for v in group["final_holdout_return"])})
        name = ("utd", "vs", arch, utd, mitigation if mitigation != "-" else "")
        made.number(macro_name(*name, "early"), early[0], "{:.0f}")
        made.number(macro_name(*name, "final"), final[0], "{:.0f}")
        if arch == "single_env":
            continue
        for measure, key, label in (("return_25k", "early", "at 25k"),
                                    ("holdout_auc", "holdout_auc", "mean over checkpoints")):
            mine, theirs = group[measure].dropna().to_numpy(), single[measure].dropna().to_numpy()
            vs = stats.compare(mine, theirs)
            rows[-1][f"P(> single_env) {label} [95% CI], rank-test p"] = (
                f"{ci(vs.probability, vs.low, vs.high, '{:.2f}')}, p {vs.p:.3f}")
            for suffix, value in (("", vs.probability), ("low", vs.low), ("high", vs.high)):
                made.number(macro_name(*name, "poi", key, *[suffix][:bool(suffix)]), value, "{:.2f}")
            made.number(macro_name(*name, "rank", "p", key), vs.p, "{:.3f}")
    made.number("UtdVsSeeds", n, "{}")
    made.number("UtdVsSeedsLast", int(single["seed"].max()), "{:d}")
    made.table("utd_against_single_env", pd.DataFrame(rows).fillna("-"),
               "high_utd against single_env at equal env steps and the same checkpoints, every cell with as "
               "many seeds as single_env (learning only: these sweeps ran two at a time, so their "
               "throughput is not reported). The rank-test p is uncorrected: these runs replicate the "
               "direction of the headline's comparison (the CartPole learning family), they are not a "
               "second test of it.")


# ---------------------------------------------------------------------- the long cells
LONG_CELLS = {"single_env": "single_env", "none": "high_utd (utd 4, LayerNorm)",
              "last": "+ last-layer resets", "all": "+ full-network resets"}
"""The long cells (experiments/sweeps/catalog.py utd_long) by their reset layers, in the table's order."""
COMPARED_WITH = {"none": "single_env", "last": "none", "all": "none"}
"""The questions the long cells ask, one comparison each per measure: does high_utd keep up with single_env,
and does each kind of reset improve on no resets? Three per measure, six with Holm over them: at 5 seeds a
side the smallest exact p (2/252) survives that correction; at 3 (0.1) none can."""


def _long_cell(row) -> str | None:
    if row["design"] == "single_env":
        return "single_env"
    if not (row["design"] == "high_utd" and bool(row["layer_norm"])):
        return None
    return row["config"].get("reset_layers", "last") if int(row["reset_period"] or 0) > 0 else "none"


def long_data(rs: RunSet, note: Note) -> FigureData | None:
    """The utd sweep's long cells (past the grid's budget): does high_utd keep CartPole once solved, and do
    resets of the last layer or of the whole network keep it from falling? Per cell, after_solving's
    counts, the final and mean holdout returns, and the comparisons COMPARED_WITH names, with the exact
    rank test and Holm over the table's comparisons
    (tests/test_report_data.py::test_utd_long_cells_are_read_after_solving)."""
    runs = _long_runs(sweep_runs(rs.runs, "utd"))
    if runs.empty:
        note("utd long cells: none run; run `python -m experiments.sweep utd` (into results/sweeps/utd; "
             "results/reference/ holds the committed runs)")
        return None
    runs = runs.assign(cell=runs.apply(_long_cell, axis=1), holdout_auc=holdout_auc(rs.holdout, runs["run_id"]).to_numpy())
    cells = {c: g for c, g in runs.groupby("cell") if c in LONG_CELLS}
    cap, solved = CAP["CartPole"], SOLVED_AT["CartPole"]
    rows, tests = [], []
    for cell in LONG_CELLS:
        if cell not in cells:
            continue
        group = cells[cell]
        final = stats.interval(group["final_holdout_return"].to_numpy(), "iqm")
        auc = stats.interval(group["holdout_auc"].to_numpy(), "iqm")
        rows.append({"cell": cell, "seeds": len(group), "final": final, "auc": auc,
                     **after_solving(rs.holdout, group["run_id"], cap, solved)})
        against = COMPARED_WITH.get(cell)
        if against in cells:
            for measure in ("final_holdout_return", "holdout_auc"):
                tests.append({"cell": cell, "against": against, "measure": measure,
                              "vs": stats.compare(group[measure].to_numpy(), cells[against][measure].to_numpy())})
    tests = [{"cell": t["cell"], "against": t["against"], "measure": t["measure"], **dataclasses.asdict(vs),
              "verdict": verdict(vs.probability, vs.holm)}
             for t, vs in zip(tests, stats.with_holm([t["vs"] for t in tests]))]
    curves = rs.holdout.loc[rs.holdout["run_id"].isin(runs["run_id"]), ["run_id", "env_step", "return_mean"]].merge(
        runs[["run_id", "cell", "seed"]], on="run_id")
    made = FigureData(curves[curves["cell"].isin(list(LONG_CELLS))][["cell", "seed", "env_step", "return_mean"]]
                      .sort_values(["cell", "seed", "env_step"], ignore_index=True),
                      parts={"tests": pd.DataFrame(tests), "rows": pd.DataFrame(rows), "names": LONG_CELLS})
    budget = int(_budgets(runs).max())
    made.table("utd_long", pd.DataFrame({
        "cell": [LONG_CELLS[r["cell"]] for r in rows], "seeds": [r["seeds"] for r in rows],
        f"final ({budget // 1000}k), IQM [95% CI]": [ci(*r["final"], "{:.0f}") for r in rows],
        "mean over checkpoints, IQM [95% CI]": [ci(*r["auc"], "{:.0f}") for r in rows],
        f"reached {cap:.0f}": [r["reached_cap"] for r in rows],
        f"then fell below {solved:.0f}": [f"{r['fell_below_solved']} of {r['reached_cap']}" for r in rows],
        f"checkpoints below {solved:.0f} after the first {cap:.0f}": [
            "-" if not np.isfinite(r["share_below_after_cap"]) else f"{100 * r['share_below_after_cap']:.0f}%"
            for r in rows]}),
        f"CartPole at {budget:,} env steps (the utd sweep's long cells, evaluation seeds): high_utd at utd 4 with "
        f"LayerNorm, alone and with resets every {_reset_env_steps(runs):,.0f} env steps' worth of updates of the "
        f"last layer or of the whole network, beside single_env; what each did after first reaching {cap:.0f}, "
        "and its returns with stratified-bootstrap intervals")
    if tests:
        labels = {"final_holdout_return": "final", "holdout_auc": "mean over checkpoints"}
        made.table("utd_long_tests", pd.DataFrame({
            "cell": [LONG_CELLS[t["cell"]] for t in tests], "against": [LONG_CELLS[t["against"]] for t in tests],
            "measure": [labels[t["measure"]] for t in tests],
            "P(cell > against) [95% CI]": [ci(t["probability"], t["low"], t["high"], "{:.2f}") for t in tests],
            "rank test p": [f"{t['p']:.3f}" for t in tests], "Holm p": [f"{t['holm']:.3f}" for t in tests],
            "verdict": [t["verdict"] for t in tests]}),
            f"The long cells' comparisons: high_utd against single_env and each kind of reset against no resets, "
            f"the probability that a run of the cell beats one of the other with its percentile-bootstrap 95% "
            f"interval, the exact two-sided rank test and Holm's correction over the table's {len(tests)} "
            f"comparisons; the verdict is 'told apart' only where the corrected p is below {ALPHA}")
    for r in rows:
        name = ("utd", "long", r["cell"])
        made.number(macro_name(*name, "seeds"), r["seeds"], "{}")
        made.number(macro_name(*name, "final"), r["final"][0], "{:.0f}")
        made.number(macro_name(*name, "auc"), r["auc"][0], "{:.0f}")
        made.number(macro_name(*name, "reached"), r["reached_cap"], "{:d}")
        made.number(macro_name(*name, "fell"), r["fell_below_solved"], "{:d}")
        made.number(macro_name(*name, "below"), 100 * r["share_below_after_cap"]
                    if np.isfinite(r["share_below_after_cap"]) else "-", "{:.0f}")
    for t in tests:
        name = ("utd", "long", t["cell"], "vs", t["against"], t["measure"])
        for suffix, key in (("", "probability"), ("low", "low"), ("high", "high")):
            made.number(macro_name(*name, "poi", *[suffix][:bool(suffix)]), t[key], "{:.2f}")
        made.number(macro_name(*name, "p"), t["p"], "{:.3f}")
        made.number(macro_name(*name, "holm"), t["holm"], "{:.3f}")
        made.number(macro_name(*name, "verdict"), t["verdict"])
    made.number("UtdLongBudget", budget)
    long_seeds = runs.loc[runs["cell"].isin(list(LONG_CELLS)), "seed"].astype(int)
    made.number("UtdLongSeedsFirst", int(long_seeds.min()), "{:d}")
    made.number("UtdLongSeedsLast", int(long_seeds.max()), "{:d}")
    made.number("UtdLongComparisons", len(tests), "{:d}")
    seeds = min(r["seeds"] for r in rows)
    # the smallest p the exact two-sided rank test can give at these seeds, before any correction
    made.number("UtdLongSmallestP", stats.rank_test_p(np.arange(seeds) + seeds, np.arange(seeds)), "{:.3f}")
    return made


def _reset_env_steps(runs: pd.DataFrame) -> float:
    resets = runs[pd.to_numeric(runs["reset_period"]).fillna(0) > 0]
    return float((pd.to_numeric(resets["reset_period"]) / resets["utd"]).median()) if not resets.empty else np.nan


def plot(report, made: FigureData) -> None:
    from analysis.report.framework.plotting import TEXT_WIDTH_IN, plt, sns

    data, single = made.data, made.parts["single"]
    fig, axes = plt.subplots(1, 3, figsize=(TEXT_WIDTH_IN, 2.9))
    seeds = f"{data['seeds'].min()}" if data["seeds"].nunique() == 1 else f"{data['seeds'].min()}-{data['seeds'].max()}"
    for ax, (column, title, fmt) in zip(axes, [
            ("return_25k_iqm", f"return at 25k env steps\n(IQM, {seeds} seeds)", ".0f"),
            ("final_iqm", f"return at 50k env steps\n(IQM, {seeds} seeds)", ".0f"),
            ("divergence_rate", "runs diverged\n(|Q| > 10 max|r|/(1-gamma))", "")]):
        pivot = data.pivot(index="utd", columns="mitigation", values=column)
        pivot.index = [f"{u:g}" for u in pivot.index]  # 1, 4, 16: not 1.0, 4.0, 16.0
        annot = True
        if column == "divergence_rate":  # counts, not a fraction of a few seeds (1/3, not 0.33)
            counts = data.pivot(index="utd", columns="mitigation", values="diverged_runs")
            runs = data.pivot(index="utd", columns="mitigation", values="seeds")
            annot = (counts.astype(int).astype(str) + "/" + runs.astype(int).astype(str)).to_numpy()
        sns.heatmap(pivot, annot=annot, fmt=fmt, ax=ax, cmap="viridis" if column != "divergence_rate" else "rocket_r",
                    vmin=0, vmax=500 if column != "divergence_rate" else 1, annot_kws={"fontsize": 7},
                    cbar_kws={"label": "holdout return" if column != "divergence_rate" else "share of seeds",
                              "shrink": 0.8})
        ax.set_title(title)
        ax.set_ylabel("utd (updates per env step)")
        ax.set_xlabel("mitigation")
    if not single.empty:
        fig.suptitle(f"single_env (utd {single['utd'].iloc[0]:g}) at the same checkpoints: final IQM "
                     f"{stats.iqm(single['final_holdout_return']):.0f} over {len(single)} seeds", y=1.0)
    fig.tight_layout()
    report.figure(fig, "utd_grid", data)


def plot_long(report, made: FigureData) -> None:
    from analysis.report.framework.plotting import PALETTE, TEXT_WIDTH_IN, plt

    LONG_CELLS = made.parts["names"]  # utd's long cells, handed over (importing utd back would be a cycle)
    curves = made.data
    cells = [c for c in LONG_CELLS if c in set(curves["cell"])]
    # the designs' own colours (high_utd's for every high_utd cell: the panels name the resets)
    colours = {c: PALETTE["single_env" if c.startswith("single") else "high_utd"] for c in LONG_CELLS}
    fig, axes = plt.subplots(1, len(cells), figsize=(TEXT_WIDTH_IN, 2.3), sharey=True, squeeze=False)
    for ax, cell in zip(axes[0], cells):
        part = curves[curves["cell"] == cell]
        for _, seed in part.groupby("seed"):
            ax.plot(seed["env_step"] / 1000, seed["return_mean"], color=colours[cell], alpha=0.35, linewidth=0.8)
        median = part.groupby("env_step")["return_mean"].median()
        ax.plot(median.index / 1000, median.to_numpy(), color=colours[cell], linewidth=2.2)
        ax.axhline(SOLVED_AT["CartPole"], color="grey", linestyle=":", linewidth=0.8)
        ax.set_title(f"{LONG_CELLS[cell]}\n({part['seed'].nunique()} seeds)")
        ax.set_xlabel("env steps (thousands)")
    axes[0][0].set_ylabel("holdout return")
    fig.tight_layout()
    report.figure(fig, "utd_long", curves)
