"""2. scaling: env steps/s once learning starts (SPEED) and parallel efficiency against workers, per
env step cost, from the `scaling` sweep, beside ideal linear scaling and the cost model's prediction
of that rate from the components the same sweep measured alone (tables/scaling_model sets measured
against predicted per cell)."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime

import numpy as np
import pandas as pd

from analysis import stats

from analysis.cost import model as cost_model
from analysis.cost.terms import measured_at
from analysis.io.load import TRAINING_EXPERIMENTS, NoRunsError, RunSet, load_runs
from analysis.report.framework.common import (ARCH_ORDER, PREDICTED, SPEED, FigureData, Note, committed, env_first, macro_name,
                                              sweep_runs, with_speed)

ROUNDING = {SPEED: 1, "parallel_efficiency": 4, PREDICTED: 1, "prediction_error": 4}
"""Digits kept in scaling.csv: the medians move by more than this between sweeps."""


def _model(note: Note, components: pd.DataFrame, config: pd.Series, env: str, cost: float,
           workers: np.ndarray) -> dict:
    """The cost model's prediction per (design, workers) for one env at one env step cost: its env
    steps/s at the runs' utd (cost_model.predict), the rate once learning, as the runs' SPEED is (not
    cost_model.over_a_run, the whole-run rate's prediction); empty, and said, where no components
    were measured."""
    if components.empty:
        note(f"scaling: no `components` run for {env} at env step cost {cost:g} us, so the cost model's prediction "
             "is not drawn; run the `scaling` sweep again (it measures them)")
        return {}
    # Several seeds' components: the median of each cost over them.
    measured_costs = cost_model.combine([cost_model.medians(r["costs_us"]) for r in components["result"]])
    cores = int(components.iloc[0]["result"]["cores"])
    return {(p.design, p.workers): p
            for p in cost_model.predict_all(measured_costs, utd=float(config["utd"]), cores=cores,
                                            weight_sync_period=int(config["weight_sync_period"] or 10),
                                            workers=[int(w) for w in workers])}


def _row(env: str, cost: float, arch: str, n: int, value: float, efficiency: float, p) -> dict:
    """One cell of scaling.csv; p is the model's prediction for it (None where none was made)."""
    return {"env": env, "env_step_cost_us": cost, "design": arch, "num_workers": n,
            SPEED: value, "parallel_efficiency": efficiency,
            PREDICTED: p.env_steps_per_sec if p else np.nan,
            "predicted_bottleneck": p.bottleneck if p else "",
            "prediction_error": value / p.env_steps_per_sec - 1 if p else np.nan}


def data(rs: RunSet, note: Note) -> FigureData | None:
    """scaling.csv (rounded), and in parts the unrounded `points` and, per env step cost (one
    column of the figure), single_env's rate, the worker counts and the model's predictions; with
    the numbers the text quotes about how the sweep ran (_settings, _window_minutes), its warm-up
    (_once_learning), the model's measured terms (_terms), the window before it (previous_window)
    and plan's confirming runs (plan_confirmed)."""
    made = _cells(rs, note)
    if made is None:
        return None
    runs = sweep_runs(rs.runs, "scaling")
    training = runs[runs["experiment"].isin(TRAINING_EXPERIMENTS)]
    measured = runs[runs["experiment"] == "components"]
    cores = int(measured.iloc[0]["result"].get("cores") or 0) if not measured.empty else 0
    _settings(made, training)
    _window_minutes(made, runs)
    if cores:
        _once_learning(made, training, cores)
        _terms(made, measured, cores)
    if "CartPole" in set(training["env"]):
        previous_window(made, _cells)
        plan_confirmed(made, note)
    return made


def _cells(rs: RunSet, note: Note) -> FigureData | None:
    """The measured cells against the model's prediction (data, less the numbers around them)."""
    scaling = sweep_runs(rs.runs, "scaling")
    runs = scaling[scaling["experiment"].isin(TRAINING_EXPERIMENTS)]
    if runs.empty:
        note("scaling: no runs of the `scaling` sweep; run `python -m experiments.sweep scaling`")
        return None
    runs = with_speed(runs, note, "scaling")
    if runs.empty:
        return None
    measured = scaling[scaling["experiment"] == "components"]
    rows, columns, singles, spread = [], [], [], {}
    for env, cost in sorted(set(zip(runs["env"], runs["env_step_cost_us"])), key=lambda k: (env_first(k[0]), k[1])):
        part = runs[(runs["env"] == env) & (runs["env_step_cost_us"] == cost)]
        tag = () if env == "CartPole" else (env,)  # CartPole's macros keep their names
        single = part[part["design"] == "single_env"]
        base = float(single[SPEED].median()) if not single.empty else float("nan")
        workers = np.array(sorted(part.loc[part["design"] != "single_env", "num_workers"].unique()))
        model = _model(note, measured[(measured["env"] == env) & (measured["env_step_cost_us"] == cost)], part.iloc[0],
                       env, cost, workers)
        for arch in ARCH_ORDER[1:4]:
            cells = part[part["design"] == arch].groupby("num_workers")[SPEED]
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
    points = pd.DataFrame(rows).sort_values(["env", "env_step_cost_us", "design", "num_workers"],
                                            ignore_index=True)
    made = FigureData(points.round(ROUNDING), parts={"points": points, "columns": columns, "spread": spread})
    for name, rate in singles:  # made with each column, before the others as they always were
        made.number(name, rate)
    for _, row in points.iterrows():
        arch, n, cost = row["design"], int(row["num_workers"]), int(row["env_step_cost_us"])
        tag = () if row["env"] == "CartPole" else (row["env"],)
        if arch != "single_env":
            made.number(macro_name("scaling", *tag, arch, n, "cost", cost), row[SPEED])
            made.number(macro_name("speedup", *tag, arch, n, "cost", cost), row["parallel_efficiency"] * n,
                        "{:.2f}")
        if np.isfinite(row[PREDICTED]):
            made.number(macro_name("model", *tag, arch, n, "cost", cost), row[PREDICTED])
            made.number(macro_name("model", "error", *tag, arch, n, "cost", cost), 100 * row["prediction_error"],
                        "{:+.0f}")
    fitted = points[np.isfinite(points["prediction_error"])]
    if not fitted.empty:
        within = fitted[fitted["num_workers"] <= int(measured.iloc[0]["result"]["cores"])]
        made.number("ModelWorstErrorWithinCores", 100 * within["prediction_error"].abs().max(), "{:.0f}")
        made.number("ModelWorstSignedWithinCores",
                    100 * within.loc[within["prediction_error"].abs().idxmax(), "prediction_error"], "{:+.0f}")
        made.number("ModelCellsWithinCores", len(within), "{:d}")
        made.number("ModelCellsWithinCoresWithinTwenty", int((within["prediction_error"].abs() <= 0.2).sum()), "{:d}")
        # the errors' sign (measured / predicted - 1 < 0: the model over-predicted) and their median
        made.number("ModelWithinCoresOverPredicted", int((within["prediction_error"] < 0).sum()), "{:d}")
        made.number("ModelWithinCoresMedianError", 100 * within["prediction_error"].median(), "{:+.0f}")
        made.number("ModelCellsAll", len(fitted), "{:d}")
        made.number("ModelAllOverPredicted", int((fitted["prediction_error"] < 0).sum()), "{:d}")
        table = pd.DataFrame({
            "env": fitted["env"], "env step cost (us)": fitted["env_step_cost_us"].map("{:g}".format),
            "design": fitted["design"],
            "workers": fitted["num_workers"], "measured env steps/s once learning": fitted[SPEED].map("{:,.0f}".format),
            "predicted": fitted[PREDICTED].map("{:,.0f}".format),
            "error": fitted["prediction_error"].map(lambda e: f"{100 * e:+.0f}%"),
            "predicted bottleneck": fitted["predicted_bottleneck"]})
        made.table("scaling_model", table,
                   "Scaling sweep: measured env steps/s once learning starts against the cost model's prediction "
                   "of that rate (at the runs' utd) from the components measured alone in the same sweep")
    return made


def _tag(env: str) -> tuple:
    return () if env == "CartPole" else (env,)  # CartPole's macros keep their names


def _settings(made: FigureData, runs: pd.DataFrame) -> None:
    """How the sweep ran, per env, from the runs' stored configs: seeds a cell (the fewest) and
    their range, the model's cells' budget, warm-up and its share of the budget per env step cost,
    their log period (high_utd's cell, remade later at its own budget, apart) and the busy env
    step's cost in ms (Scaling[<Env>]Seeds, ...SeedsFirst, ...BudgetCost<c>, ...LearningStartsCost<c>,
    ...WarmUpShareCost<c>, ...LogEvery, ...HighUtdBudget, ...BusyCostMs)."""
    for env, part in runs.groupby("env"):
        tag = _tag(env)
        cells = part.groupby(["design", "num_workers", "env_step_cost_us", "utd"])
        made.number(macro_name("scaling", *tag, "seeds"), int(cells.size().min()), "{:d}")
        if not tag:  # the smallest p the exact rank test can give at this many runs a side (all ordered)
            n = int(cells.size().min())
            made.number("ScalingSmallestP", stats.rank_test_p(np.arange(n) + n, np.arange(n)), "{:.2f}")
        made.number(macro_name("scaling", *tag, "seeds", "first"), int(part["seed"].min()), "{:d}")
        made.number(macro_name("scaling", *tag, "seeds", "last"), int(part["seed"].max()), "{:d}")
        model = part[part["design"] != "high_utd"]
        for cost, at in model.groupby("env_step_cost_us"):
            budgets = pd.to_numeric(at["total_env_steps"], errors="coerce").dropna()
            if budgets.empty:  # runs stored without their budget
                continue
            budget = float(budgets.mode().iloc[0])
            starts = float(pd.to_numeric(at["learning_starts"], errors="coerce").fillna(0).mode().iloc[0])
            made.number(macro_name("scaling", *tag, "budget", "cost", int(cost)), budget)
            made.number(macro_name("scaling", *tag, "learning starts", "cost", int(cost)), starts)
            made.number(macro_name("scaling", *tag, "warm up", "share", "cost", int(cost)), 100 * starts / budget,
                        "{:.0f}")
        logs = model["config"].map(lambda c: c.get("log_every")).dropna()
        if not logs.empty:
            made.number(macro_name("scaling", *tag, "log every"), float(logs.mode().iloc[0]))
        high = pd.to_numeric(part.loc[part["design"] == "high_utd", "total_env_steps"], errors="coerce").dropna()
        if not high.empty:
            made.number(macro_name("scaling", *tag, "high_utd", "budget"), float(high.mode().iloc[0]))
        busy = float(pd.to_numeric(part["env_step_cost_us"]).fillna(0).max())
        if busy > 0:
            made.number(macro_name("scaling", *tag, "busy cost", "ms"), busy / 1000, "{:g}")


LATER_WINDOWS = ("high_utd", "pqn")
"""The scaling cells remade or added after the sweep's window: high_utd's (its own budget) and pqn's
(after its prediction's commit; results/README.md)."""


def _window_minutes(made: FigureData, runs: pd.DataFrame) -> None:
    """Scaling[<Env>]WindowMinutes: from the first start to the last stop of the model's cells and
    components, from each run's stored run.json; nothing where a run's times are not in a file store.
    The cells made in later windows are apart (LATER_WINDOWS): with pqn's, made days later, the
    CartPole window read 2,126 minutes (tests/test_report_data.py::test_the_window_leaves_out_later_cells)."""
    for env, part in runs[~runs["design"].isin(LATER_WINDOWS)].groupby("env"):
        times = []
        for source in part["source"]:
            path = os.path.join(str(source), "run.json")
            if not os.path.isfile(path):
                return
            with open(path) as f:
                run = json.load(f)
            if not (run.get("start_time") and run.get("stop_time")):
                return
            times.append((datetime.fromisoformat(run["start_time"]), datetime.fromisoformat(run["stop_time"])))
        span = max(stop for _, stop in times) - min(start for start, _ in times)
        made.number(macro_name("scaling", *_tag(env), "window", "minutes"), span.total_seconds() / 60, "{:.0f}")


def _once_learning(made: FigureData, runs: pd.DataFrame, cores: int) -> None:
    """How far each cell's rate once learning (SPEED, the one the figure and the model use) falls below
    its whole-run rate, over the cells the text quotes (single_env, and each design at as many
    workers as cores, at every env step cost): its range as Scaling[<Env>]OnceLearningBelowLow/High,
    and the whole-run rate's excess over it as ...WholeRunAboveLow/High (percent)."""
    quoted = runs[(runs["design"].isin(ARCH_ORDER[1:4]) & (runs["num_workers"] == cores))
                  | (runs["design"] == "single_env")]
    for env, part in quoted.groupby("env"):
        # the whole-run rate is itself the subject here: how much its warm-up would overstate SPEED
        cells = part.groupby(["design", "num_workers", "env_step_cost_us"])[
            ["env_steps_per_sec", SPEED]].median().dropna()
        if cells.empty:
            continue
        below = 100 * (1 - cells[SPEED] / cells["env_steps_per_sec"])
        above = 100 * (cells["env_steps_per_sec"] / cells[SPEED] - 1)
        for name, values in (("once learning below", below), ("whole run above", above)):
            made.number(macro_name("scaling", *_tag(env), name, "low"), values.min(), "{:.0f}")
            made.number(macro_name("scaling", *_tag(env), name, "high"), values.max(), "{:.0f}")


def _learner_alone(c: dict, config: dict) -> float:
    """The learner's CPU per env step as the time-sharing bound first assumed it: its components as
    single_env's loop pays them (cost_designs._actor_learner's `learner`, before `actor_learner_shared`)."""
    k = cost_model.loop_costs(c)
    utd, period = float(config["utd"]), int(config.get("weight_sync_period") or 10)
    return utd * (k["sample"] + k["update"] + c["diagnostics"] + c["weight_publish"] / period) + c["ring_drain"]


def _terms(made: FigureData, measured: pd.DataFrame, cores: int) -> None:
    """The model's measured terms, per env and env step cost, as ranges over the sweep's
    components runs (one a seed): hogwild's loop at as many workers as cores per worker against one
    worker (Scaling[<Env>]HogwildAtCoresCost<c>Low/High), single_env's loop beside loops like it on
    the other cores (...ContentionCost<c>...), and actor_learner's learner time-shared at as many
    actors as cores against its alone CPU (...SharedLearnerCost<c>...); ...ComponentsCost<c>Runs
    counts the runs."""
    for (env, cost), part in measured.groupby(["env", "env_step_cost_us"]):
        terms = {"hogwild at cores": [], "contention": [], "shared learner": []}
        for _, run in part.iterrows():
            c = cost_model.medians(run["result"]["costs_us"])
            if c.get("hogwild_at_cores") and c.get("hogwild_in_loop"):
                crowd, at_crowd = measured_at(c["hogwild_at_cores"], cores)
                terms["hogwild at cores"].append(at_crowd * crowd / c["hogwild_in_loop"])
            if c.get("contention"):
                terms["contention"].append(c["contention"])
            if (c.get("actor_learner_shared") or {}).get("learner") and all(
                    key in c for key in ("sample", "update", "diagnostics", "weight_publish", "ring_drain")):
                terms["shared learner"].append(c["actor_learner_shared"]["learner"] / _learner_alone(c, run["config"]))
        tag = _tag(env)
        made.number(macro_name("scaling", *tag, "components", "cost", int(cost), "runs"), len(part), "{:d}")
        for name, values in terms.items():
            if values:
                made.number(macro_name("scaling", *tag, name, "cost", int(cost), "low"), min(values), "{:.2f}")
                made.number(macro_name("scaling", *tag, name, "cost", int(cost), "high"), max(values), "{:.2f}")


PREVIOUS_WINDOW = committed("results", "benchmarks", "scaling_window_v5")
"""The same CartPole cells and components as the reference `scaling` set, measured in the window
before it, whose components lacked hogwild's loop at as many workers as cores (stored Sacred runs;
results/README.md): the miss that term mends, and the window-to-window spread, come from here."""
PLAN_TEXT = committed("results", "benchmarks", "plan_cartpole_2core", "plan.txt")
"""`python -m experiments.plan` on the default CartPole config, twice back to back, both printed
outputs: each plan's recommendation and its confirming run against the model's prediction of it,
the model's test out of sample."""


def previous_window(made: FigureData, cells) -> None:
    """The window before the reference set (PREVIOUS_WINDOW), CartPole at a free env step: hogwild
    (1)'s rate (ScalingPreviousHogwildOne), how much slower per worker hogwild ran at as many workers
    as cores (...HogwildPerWorker), the model's miss there (...HogwildError: that window measured
    no hogwild loop at the cores, so the model falls back to independent loops' slowdown, as it did
    then) and that slowdown, the median of its `contention` measurements (...Contention). `cells`:
    scaling's own cell builder, handed in (importing it back would make a cycle)."""
    if not os.path.isdir(PREVIOUS_WINDOW):
        return
    try:
        rs = load_runs([PREVIOUS_WINDOW])
    except NoRunsError:
        return
    before = cells(rs, lambda line: None)
    if before is None:
        return
    points = before.parts["points"]
    free = points[(points["env"] == "CartPole") & (points["env_step_cost_us"] == 0)
                  & (points["design"] == "hogwild")].set_index("num_workers")
    measured = rs.runs[(rs.runs["experiment"] == "components") & (rs.runs["env"] == "CartPole")
                       & (rs.runs["env_step_cost_us"] == 0)]
    if measured.empty or 1 not in free.index:
        return
    cores = int(measured.iloc[0]["result"]["cores"])
    made.number("ScalingPreviousHogwildOne", free.loc[1, SPEED])
    if cores in free.index:
        made.number("ScalingPreviousHogwildPerWorker", cores * free.loc[1, SPEED] / free.loc[cores, SPEED], "{:.2f}")
        made.number("ScalingPreviousHogwildError", 100 * free.loc[cores, "prediction_error"], "{:+.0f}")
    made.number("ScalingPreviousContention", float(np.median(
        [cost_model.medians(r["costs_us"])["contention"] for r in measured["result"]])), "{:.2f}")


CONFIRMED = re.compile(r"^confirmed:\s+(\w+) \((\d+),.*predicted ([\d,.]+), measured ([\d,.]+) env steps/s")
RECOMMENDED = re.compile(r"^recommended:\s+(\w+) with (\d+) worker")


def plan_confirmed(made: FigureData, note: Note) -> None:
    """Each plan's recommendation in PLAN_TEXT and how its confirming run missed the model's
    prediction of it (measured / predicted - 1, from the printed rates) and what it measured:
    PlanCartPoleRecommended, PlanCartPoleMissFirst, ...Second, PlanCartPoleMeasuredFirst, ...Second.
    These rates are whole-run ones, as plan printed them (its run's env steps over its training
    seconds, against cost_model.over_a_run): a printed text, no stored run whose log could give SPEED."""
    if not os.path.exists(PLAN_TEXT):
        return
    with open(PLAN_TEXT) as f:
        plans = f.read().split("\n## ")[1:]
    misses, recommended = [], set()
    for plan in plans:
        lines = plan.splitlines()
        best = next((m.groups() for m in map(RECOMMENDED.match, lines) if m), None)
        for m in filter(None, map(CONFIRMED.match, lines)):
            if best and m.group(1, 2) == best:
                predicted, measured = (float(v.replace(",", "")) for v in m.group(3, 4))
                misses.append((100 * (measured / predicted - 1), measured))
                recommended.add(f"{best[0]} ({best[1]})")
    if len(recommended) != 1:
        note(f"scaling: {PLAN_TEXT}'s plans recommend {sorted(recommended) or 'nothing'}; their misses are not quoted")
        return
    made.number("PlanCartPoleRecommended", recommended.pop())
    for which, (miss, measured) in zip(("first", "second"), misses):
        made.number(macro_name("plan", "CartPole", "miss", which), miss, "{:+.0f}")
        made.number(macro_name("plan", "CartPole", "measured", which), measured)


def plot(report, made: FigureData) -> None:
    from analysis.report.framework.plotting import MARKERS, PALETTE, TEXT_WIDTH_IN, log_axis, plt

    points, columns = made.parts["points"], made.parts["columns"]
    spread = made.parts.get("spread", {})
    fig, axes = plt.subplots(2, len(columns), figsize=(TEXT_WIDTH_IN, 4.6), squeeze=False, sharex="col",
                             gridspec_kw={"height_ratios": [2, 1]})
    for col, column in enumerate(columns):
        env, cost, base, workers, predicted = (column["env"], column["cost"], column["base"], column["workers"],
                                               column["predicted"])
        ax, eff = axes[0][col], axes[1][col]
        for arch in ARCH_ORDER[1:4]:
            sub = points[(points["env"] == env) & (points["env_step_cost_us"] == cost)
                         & (points["design"] == arch)]
            if sub.empty:
                continue
            x, y = sub["num_workers"].to_numpy(), sub[SPEED].to_numpy()
            ranges = np.array([spread.get((env, cost, arch, int(n)), (v, v)) for n, v in zip(x, y)])
            ax.errorbar(x, y, yerr=[y - ranges[:, 0], ranges[:, 1] - y], marker=MARKERS[arch], ms=3, capsize=2,
                        color=PALETTE[arch], label=arch)
            eff.plot(sub["num_workers"].to_numpy(), sub["parallel_efficiency"].to_numpy(), marker=MARKERS[arch],
                     ms=3, color=PALETTE[arch], label=arch)
            if predicted:
                ax.plot(workers, [predicted[(arch, int(n))] for n in workers], "--", color=PALETTE[arch], lw=1,
                        alpha=0.8)
        if np.isfinite(base):
            ax.plot(workers, workers * base, ":", color="grey", lw=1, label="n x single_env")
            ax.axhline(base, color=PALETTE["single_env"], lw=1, label="single_env")
        if predicted:
            ax.plot([], [], "--", color="grey", lw=1, label="cost model")
        log_axis(ax, "y")
        if col == 0:
            ax.set_ylabel("env steps/s once learning\n(median, min-max)")
        ax.set_title(f"{env}, env step {'free' if not cost else f'{cost / 1000:g} ms busy'}")
        if col == 0:
            ax.legend(ncol=2, loc="upper left")
        eff.axhline(1.0, color="k", ls="--", lw=1)
        if col == 0:
            eff.set_ylabel("efficiency\n(/ n x single_env)")
        eff.set_xlabel("workers")
        eff.set_xticks(workers)
    fig.tight_layout()
    report.figure(fig, "scaling", made.data)
