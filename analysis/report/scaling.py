"""2. scaling: env steps/s and parallel efficiency against workers, per env step cost, from the
`scaling` sweep, beside ideal linear scaling and the cost model's prediction from the components
the same sweep measured alone (tables/scaling_model sets measured against predicted per cell)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from analysis import cost_model
from analysis.load import TRAINING_EXPERIMENTS, RunSet
from analysis.report.common import ARCH_ORDER, FigureData, Note, _sweep, env_first, macro_name

ROUNDING = {"env_steps_per_sec": 1, "parallel_efficiency": 4, "predicted_env_steps_per_sec": 1, "prediction_error": 4}
"""Digits kept in scaling.csv: the medians move by more than this between sweeps."""


def _model(note: Note, components: pd.DataFrame, config: pd.Series, env: str, cost: float,
           workers: np.ndarray) -> dict:
    """The cost model's prediction per (design, workers) for one env at one env step cost, its env
    steps/s averaged over a whole run as the runs' are; empty, and said, where no components were
    measured."""
    if components.empty:
        note(f"scaling: no `components` run for {env} at env step cost {cost:g} us, so the cost model's prediction "
             "is not drawn; run the `scaling` sweep again (it measures them)")
        return {}
    # Several seeds' components: the median of each cost over them.
    measured_costs = cost_model.combine([cost_model.medians(r["costs_us"]) for r in components["result"]])
    cores = int(components.iloc[0]["result"]["cores"])
    model = {}
    for p in cost_model.predict_all(measured_costs, utd=float(config["utd"]), cores=cores,
                                    weight_sync_period=int(config["weight_sync_period"] or 10),
                                    workers=[int(w) for w in workers]):
        # A run's env steps/s averages its first learning_starts steps (no updates) in.
        over_run = cost_model.over_a_run(
            p.design, p.workers, measured_costs, utd=float(config["utd"]), cores=cores,
            total_env_steps=int(config["total_env_steps"]),
            learning_starts=int(config["learning_starts"] or 0),
            weight_sync_period=int(config["weight_sync_period"] or 10))
        model[(p.design, p.workers)] = dataclasses.replace(p, env_steps_per_sec=over_run)
    return model


def _row(env: str, cost: float, arch: str, n: int, value: float, efficiency: float, p) -> dict:
    """One cell of scaling.csv; p is the model's prediction for it (None where none was made)."""
    return {"env": env, "env_step_cost_us": cost, "architecture": arch, "num_workers": n,
            "env_steps_per_sec": value, "parallel_efficiency": efficiency,
            "predicted_env_steps_per_sec": p.env_steps_per_sec if p else np.nan,
            "predicted_bottleneck": p.bottleneck if p else "",
            "prediction_error": value / p.env_steps_per_sec - 1 if p else np.nan}


def data(rs: RunSet, note: Note) -> FigureData | None:
    """scaling.csv (rounded), and in parts the unrounded `points` and, per env step cost (one
    column of the figure), single_env's rate, the worker counts and the model's predictions."""
    scaling = _sweep(rs.runs, "scaling")
    runs = scaling[scaling["experiment"].isin(TRAINING_EXPERIMENTS)]
    if runs.empty:
        note("scaling: no runs of the `scaling` sweep; run `python -m experiments.sweep scaling`")
        return None
    measured = scaling[scaling["experiment"] == "components"]
    rows, columns, singles, spread = [], [], [], {}
    for env, cost in sorted(set(zip(runs["env"], runs["env_step_cost_us"])), key=lambda k: (env_first(k[0]), k[1])):
        part = runs[(runs["env"] == env) & (runs["env_step_cost_us"] == cost)]
        tag = () if env == "CartPole" else (env,)  # CartPole's macros keep their names
        single = part[part["architecture"] == "single_env"]
        base = float(single["env_steps_per_sec"].median()) if not single.empty else float("nan")
        workers = np.array(sorted(part.loc[part["architecture"] != "single_env", "num_workers"].unique()))
        model = _model(note, measured[(measured["env"] == env) & (measured["env_step_cost_us"] == cost)], part.iloc[0],
                       env, cost, workers)
        for arch in ARCH_ORDER[1:4]:
            cells = part[part["architecture"] == arch].groupby("num_workers")["env_steps_per_sec"]
            sub = cells.median()
            for n, values in cells:  # the seeds' range, drawn as the figure's bars
                spread[(env, cost, arch, int(n))] = (float(values.min()), float(values.max()))
            for n, v in sub.items():
                rows.append(_row(env, cost, arch, int(n), v, v / (n * base), model.get((arch, int(n)))))
        if np.isfinite(base):
            rows.append(_row(env, cost, "single_env", 1, base, 1.0, model.get(("single_env", 1))))
            singles.append((macro_name("scaling", *tag, "single", "cost", int(cost)), base))
        columns.append({"env": env, "cost": cost, "base": base, "workers": workers,
                        "predicted": {key: p.env_steps_per_sec for key, p in model.items()}})
    points = pd.DataFrame(rows).sort_values(["env", "env_step_cost_us", "architecture", "num_workers"],
                                            ignore_index=True)
    made = FigureData(points.round(ROUNDING), parts={"points": points, "columns": columns, "spread": spread})
    for name, rate in singles:  # made with each column, before the others as they always were
        made.number(name, rate)
    for _, row in points.iterrows():
        arch, n, cost = row["architecture"], int(row["num_workers"]), int(row["env_step_cost_us"])
        tag = () if row["env"] == "CartPole" else (row["env"],)
        if arch != "single_env":
            made.number(macro_name("scaling", *tag, arch, n, "cost", cost), row["env_steps_per_sec"])
            made.number(macro_name("speedup", *tag, arch, n, "cost", cost), row["parallel_efficiency"] * n,
                        "{:.2f}")
        if np.isfinite(row["predicted_env_steps_per_sec"]):
            made.number(macro_name("model", *tag, arch, n, "cost", cost), row["predicted_env_steps_per_sec"])
            made.number(macro_name("model", "error", *tag, arch, n, "cost", cost), 100 * row["prediction_error"],
                        "{:+.0f}")
    fitted = points[np.isfinite(points["prediction_error"])]
    if not fitted.empty:
        within = fitted[fitted["num_workers"] <= int(measured.iloc[0]["result"]["cores"])]
        made.number("ModelWorstErrorWithinCores", 100 * within["prediction_error"].abs().max(), "{:.0f}")
        made.number("ModelCellsWithinCores", len(within), "{:d}")
        made.number("ModelCellsWithinCoresWithinTwenty", int((within["prediction_error"].abs() <= 0.2).sum()), "{:d}")
        table = pd.DataFrame({
            "env": fitted["env"], "env step cost (us)": fitted["env_step_cost_us"].map("{:g}".format),
            "design": fitted["architecture"],
            "workers": fitted["num_workers"], "measured env steps/s": fitted["env_steps_per_sec"].map("{:,.0f}".format),
            "predicted": fitted["predicted_env_steps_per_sec"].map("{:,.0f}".format),
            "error": fitted["prediction_error"].map(lambda e: f"{100 * e:+.0f}%"),
            "predicted bottleneck": fitted["predicted_bottleneck"]})
        made.table("scaling_model", table,
                   "Scaling sweep: measured env steps/s against the cost model's prediction from the components "
                   "measured alone in the same sweep")
    return made


def plot(report, made: FigureData) -> None:
    from analysis.report.plotting import PALETTE, _log_axis, plt

    points, columns = made.parts["points"], made.parts["columns"]
    spread = made.parts.get("spread", {})
    fig, axes = plt.subplots(2, len(columns), figsize=(5 * len(columns), 6.5), squeeze=False, sharex="col")
    for col, column in enumerate(columns):
        env, cost, base, workers, predicted = (column["env"], column["cost"], column["base"], column["workers"],
                                               column["predicted"])
        ax, eff = axes[0][col], axes[1][col]
        for arch in ARCH_ORDER[1:4]:
            sub = points[(points["env"] == env) & (points["env_step_cost_us"] == cost)
                         & (points["architecture"] == arch)]
            if sub.empty:
                continue
            x, y = sub["num_workers"].to_numpy(), sub["env_steps_per_sec"].to_numpy()
            ranges = np.array([spread.get((env, cost, arch, int(n)), (v, v)) for n, v in zip(x, y)])
            ax.errorbar(x, y, yerr=[y - ranges[:, 0], ranges[:, 1] - y], marker="o", capsize=2,
                        color=PALETTE[arch], label=f"{arch} (median, min-max over seeds)")
            eff.plot(sub["num_workers"].to_numpy(), sub["parallel_efficiency"].to_numpy(), marker="o",
                     color=PALETTE[arch], label=arch)
            if predicted:
                ax.plot(workers, [predicted[(arch, int(n))] for n in workers], "--", color=PALETTE[arch], lw=1,
                        alpha=0.8)
        if np.isfinite(base):
            ax.plot(workers, workers * base, "k:", lw=1, label="ideal linear (n x single_env)")
            ax.axhline(base, color=PALETTE["single_env"], lw=1, label="single_env")
        if predicted:
            ax.plot([], [], "--", color="grey", lw=1, label="cost model (from measured components)")
        _log_axis(ax, "y")
        if col == 0:
            ax.set_ylabel("env steps/s (median over seeds)")
        ax.set_title(f"{env}, env step cost {cost:g} us")
        ax.legend(fontsize=7)
        eff.axhline(1.0, color="k", ls="--", lw=1)
        if col == 0:
            eff.set_ylabel("parallel efficiency\n(steps/s / (n x single_env))")
        eff.set_xlabel("workers (processes or envs)")
        eff.set_xticks(workers)
    fig.tight_layout()
    report.figure(fig, "scaling", made.data)
