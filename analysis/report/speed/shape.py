"""The practitioner's shape (docs/plan-and-cost-model.md): many workers on an env that waits, measured against the
cost model's predictions written before the runs, beside the practitioner's own curve.

Reads the `seed_shape` sweep's runs (CartPole whose step waits 2.2 ms without CPU, the cartpole
learner at utd 0.25; throughput only, one at a time) and the predictions
`experiments.plan.predict` wrote for every cell before those runs existed (PREDICTIONS). Each cell's
speed is its runs' env steps/s once learning starts (SPEED), set against the prediction of that
rate the same file holds (PREDICTION_KEY, the model at the runs' utd), not its whole-run one.
Nothing is refitted here: a cell the model misses is reported as missed (tables/seed_shape_model),
with the role each run's own time breakdown names as its bound beside the role the model named.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

from analysis.io.load import TRAINING_EXPERIMENTS, RunSet
from analysis.report.framework.claims import cpu_bound
from analysis.report.framework.common import (ARCH_ORDER, PREDICTED, PREDICTION_KEY, SPEED, FigureData, Note, sweep_runs, committed,
                                              macro_name, predicted_speed, with_speed)

PREDICTIONS = committed("results", "reference", "seed_shape", "predicted.json")
"""Written by `python -m experiments.plan.predict seed_shape ...` and committed before the sweep ran."""
CHECK_PREDICTIONS = committed("results", "reference", "shape_check", "predicted.json")
"""The second prediction (the model with `in_loop_waiting`), for the `shape_check` sweep, committed
before its runs: the first table stays as it was."""
CONFIRM_PREDICTIONS = committed("results", "reference", "shape_confirm", "predicted.json")
"""The third prediction (each actor_learner role's CPU past the cores as its own runs paid it), for
the `shape_confirm` sweep, committed before its runs."""
FIGURES = {"seed_shape": "practitioner_shape", "shape_check": "practitioner_shape_check",
           "shape_confirm": "practitioner_shape_confirm"}
# not our stored runs: the practitioner's own numbers as they reported them (no log to take SPEED from)
PRACTITIONER = pd.DataFrame({"workers": [1, 2, 4, 12], "env_steps_per_sec": [424.0, 642.0, 975.0, 1409.0],
                             "low": [424.0, 642.0, 900.0, 1409.0], "high": [424.0, 642.0, 1050.0, 1409.0]})
"""The practitioner's report (shared/seeds/000_491a81bcabd90492.txt): env steps/s at one update per
4 env steps on 24 logical cores, worker processes stepping their envs (4 workers: 900-1,050), as
they reported them."""
PRACTITIONER_CORES = 24
"""The logical cores of the practitioner's machine, from the same report (the figure's label and
ShapePractitionerCores)."""
PRACTITIONER_UPDATE_MS, PRACTITIONER_UTD = 0.6, 0.25
"""Their gradient step and updates per env step, from the same report: with their best rate, how
busy their learner was (ShapePractitionerLearnerBusy), the question their report could not answer."""


def _predictions(note: Note, path: str = PREDICTIONS, sweep: str = "seed_shape") -> dict:
    if not os.path.exists(path):
        note(f"shape: no predictions at {path}; `python -m experiments.plan.predict {sweep}` writes them, "
             "before the sweep runs")
        return {}
    with open(path) as f:
        record = json.load(f)
    if any(PREDICTION_KEY not in p for p in record["predictions"]):
        note(f"shape: {path} predicts no env steps/s once learning ({PREDICTION_KEY}) for some cells; they are "
             "shown without a prediction (its whole-run one is not set against the runs' rate once learning)")
    return {(p["design"], int(p["workers"])): p for p in record["predictions"]}


LEARNER_PARTS = {"update": ("update",), "sample": ("sample", "diagnostics"), "drain": ("handoff_drain",),
                 "wait": ("wait",)}
"""The learner's time, in the shares the practitioner asked about: its update, its sampling (and
the lag diagnostics), its drain of the actors' hand-off, and its waiting for data."""


def _bound(result: dict) -> tuple[str, float, str]:
    """The role a run's own time breakdown names as its bound, the learner's busy share, and the
    learner's time in LEARNER_PARTS as shares of the training time (actor_learner only)."""
    bottleneck = result.get("bottleneck") or {}
    busy = bottleneck.get("busy_fraction") or {}
    rows, seconds = result.get("time_breakdown") or {}, float(result.get("train_seconds") or np.nan)
    shares = ""
    if "handoff_drain" in rows:
        shares = " / ".join(f"{100 * sum(rows.get(k, {}).get('seconds', 0.0) for k in keys) / seconds:.0f}%"
                            for keys in LEARNER_PARTS.values())
    return bottleneck.get("role", "process"), float(busy.get("learner", np.nan)), shares


def _and(items) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def prediction_plan(predictions: str) -> dict | None:
    """The plan that measured the components a prediction was made from (plan/plan.json beside it)."""
    path = os.path.join(os.path.dirname(predictions), "plan", "plan.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def data(rs: RunSet, note: Note) -> FigureData | None:
    """The first prediction against the `seed_shape` runs (table seed_shape_model), the
    practitioner's curve as the figure draws it (ShapePractitioner...), and the update that
    prediction took from its plan: measured alone (ShapeUpdateAlone) and in single_env's busy loop
    (ShapeBusyLoopUpdate), where the runs paid more (ShapeActorLearnerUpdateMin, ...Max)."""
    made = shape_cells(rs, note, "seed_shape", PREDICTIONS, "seed_shape_model", "Shape", "the cost model's prediction")
    if made is None:
        return None
    one = PRACTITIONER[PRACTITIONER["workers"] == 1]
    if not one.empty:
        made.number("ShapePractitionerSingle", float(one["env_steps_per_sec"].iloc[0]))  # theirs, as reported
    spread = PRACTITIONER[PRACTITIONER["low"] < PRACTITIONER["high"]]
    if len(spread) == 1:
        made.number("ShapePractitionerSpreadWorkers", int(spread["workers"].iloc[0]), "{:d}")
        made.number("ShapePractitionerSpreadLow", float(spread["low"].iloc[0]))
        made.number("ShapePractitionerSpreadHigh", float(spread["high"].iloc[0]))
    made.number("ShapePractitionerCores", PRACTITIONER_CORES, "{:d}")
    best = PRACTITIONER.iloc[-1]
    made.number("ShapePractitionerBest", float(best["env_steps_per_sec"]))
    made.number("ShapePractitionerBestWorkers", int(best["workers"]), "{:d}")
    made.number("ShapePractitionerUpdateMs", PRACTITIONER_UPDATE_MS, "{:g}")
    made.number("ShapePractitionerLearnerBusy",  # update seconds per second of running, as a percentage
                100 * float(best["env_steps_per_sec"]) * PRACTITIONER_UTD * PRACTITIONER_UPDATE_MS / 1000, "{:.0f}")
    plan = prediction_plan(PREDICTIONS)
    if plan:
        costs = plan["component_costs_us"]
        made.number("ShapeUpdateAlone", costs["update"]["us"])
        if "in_loop" in costs:
            made.number("ShapeBusyLoopUpdate", costs["in_loop"]["update"]["us"])
    return made


def check_data(rs: RunSet, note: Note) -> FigureData | None:
    """The second prediction against the `shape_check` runs (table shape_check_model)."""
    return shape_cells(rs, note, "shape_check", CHECK_PREDICTIONS, "shape_check_model", "ShapeCheck",
                  "the cost model's second prediction (with the waiting loop's update; actors at nice 19)")


def confirm_data(rs: RunSet, note: Note) -> FigureData | None:
    """The third prediction against the `shape_confirm` runs (table shape_confirm_model), and
    plan's recommendation in it: the plan that made the prediction (beside predicted.json) names
    the point it recommended and the actors' CPU per env step it measured past the cores."""
    made = shape_cells(rs, note, "shape_confirm", CONFIRM_PREDICTIONS, "shape_confirm_model", "ShapeConfirm",
                  "the cost model's third prediction (each actor_learner role's CPU past the cores as its own runs "
                  "paid it)")
    plan = prediction_plan(CONFIRM_PREDICTIONS) if made is not None else None
    if plan is None:
        return made
    best = plan["recommended"]
    points = made.parts["points"].set_index(["design", "num_workers"])
    if plan.get("runner_up"):
        made.number("ShapeConfirmRunnerUp", f"{plan['runner_up']['design']} ({plan['runner_up']['workers']})")
    if (best["design"], int(best["workers"])) in points.index:
        row = points.loc[(best["design"], int(best["workers"]))]
        made.number("ShapeConfirmRecommended", f"{best['design']} ({best['workers']})")
        made.number("ShapeConfirmRecommendedWorkers", int(best["workers"]), "{:d}")
        made.number("ShapeConfirmRecommendedPredicted", row[PREDICTED])
        made.number("ShapeConfirmRecommendedMeasured", row[SPEED])
        made.number("ShapeConfirmRecommendedError", 100 * row["error"], "{:+.0f}")
    costs = plan["component_costs_us"]
    made.number("ShapeConfirmBusyLoopUpdate", costs["in_loop"]["update"]["us"])
    vector = points.xs("vector_env", level="design") if "vector_env" in points.index.get_level_values(0) else None
    if vector is not None and not vector.empty:
        made.number("ShapeConfirmVectorEnvUpdate", float(vector["update_us"].iloc[-1]))
        made.number("ShapeConfirmVectorEnvCoresBusy", float(vector["cores_busy"].iloc[-1]), "{:.1f}")
    for key, name in (("actor_learner_waiting_actors", "actors"), ("actor_learner_waiting_learner", "learner")):
        for n, value in sorted((costs.get(key) or {}).items(), key=lambda kv: int(kv[0])):
            made.number(macro_name("shape confirm", name, "cpu", int(n)), value["us"])
    counts = sorted(int(n) for n in costs.get("actor_learner_waiting_actors") or {})
    if len(counts) == 2:  # the actor counts those were measured at (components.waiting_counts)
        made.number("ShapeConfirmCpuFewerActors", counts[0], "{:d}")
        made.number("ShapeConfirmCpuMoreActors", counts[1], "{:d}")
    return made


def _cores_busy(result: dict) -> float:
    """The cores the run's processes kept busy on average (its `cpu`; runs before it: NaN)."""
    return float((result.get("cpu") or {}).get("cores_busy", np.nan))


def shape_cells(rs: RunSet, note: Note, sweep: str, predictions: str, table_name: str, prefix: str,
           prediction: str) -> FigureData | None:
    """One shape sweep's measured rates beside the predictions committed before it ran, as a table with its numbers."""
    runs = sweep_runs(rs.runs, sweep)
    runs = runs[runs["experiment"].isin(TRAINING_EXPERIMENTS)]
    if runs.empty:
        note(f"shape: no runs of the `{sweep}` sweep; run `python -m experiments.sweep {sweep}`")
        return None
    runs = with_speed(runs, note, f"shape, {sweep}")
    if runs.empty:
        return None
    predicted = _predictions(note, predictions, sweep)
    rows = []
    for (arch, n), group in runs.groupby(["design", "num_workers"]):
        n = 1 if arch == "single_env" else int(n)
        speeds = group[SPEED].to_numpy(dtype=float)
        middle = group.iloc[int(np.argsort(speeds)[len(speeds) // 2])]  # the median run, whose breakdown is quoted
        role, learner_busy, shares = _bound(middle["result"])
        role = "CPU" if arch != "single_env" and cpu_bound(n, middle["result"]) else role  # claims.CPU_FULL
        update_us = float((middle["result"].get("time_breakdown") or {}).get("update", {}).get("us_per_call", np.nan))
        p = predicted.get((arch, n))
        forecast = predicted_speed(p)
        rows.append({"design": arch, "num_workers": n, "seeds": len(group),
                     SPEED: float(np.median(speeds)), "low": float(speeds.min()),
                     "high": float(speeds.max()), "measured_bound": role, "learner_busy": learner_busy,
                     "learner_shares": shares, "update_us": update_us,
                     "cores_busy": _cores_busy(middle["result"]),
                     PREDICTED: forecast,
                     "predicted_bound": ("CPU" if p["bottleneck"] == "cores" else p["bottleneck"]) if p else "",
                     "error": float(np.median(speeds)) / forecast - 1})
    points = pd.DataFrame(rows)
    points["order"] = points["design"].map(ARCH_ORDER.index)
    points = points.sort_values(["order", "num_workers"], ignore_index=True).drop(columns="order")
    measured_cpu = bool(np.isfinite(points["cores_busy"]).any())  # runs before the `cpu` record: no column
    made = FigureData(points.round(4) if measured_cpu else points.drop(columns="cores_busy").round(4),
                      parts={"points": points, "sweep": sweep})
    table = pd.DataFrame({
        "design": points["design"], "workers": points["num_workers"],
        "measured (median [min, max])": [f"{m:,.0f} [{lo:,.0f}, {hi:,.0f}]" for m, lo, hi in
                                         zip(points[SPEED], points["low"], points["high"])],
        "predicted": points[PREDICTED].map(lambda v: "-" if not np.isfinite(v) else f"{v:,.0f}"),
        "error": points["error"].map(lambda e: "-" if not np.isfinite(e) else f"{100 * e:+.0f}%"),
        "bound (runs)": points["measured_bound"],
        "learner: update / sample / drain / wait": points["learner_shares"].replace("", "-"),
        "update (us)": points["update_us"].map(lambda u: "-" if not np.isfinite(u) else f"{u:,.0f}"),
        "bound (model)": points["predicted_bound"]})
    if measured_cpu:
        table.insert(6, "cores busy", points["cores_busy"].map(lambda u: "-" if not np.isfinite(u) else f"{u:.2f}"))
    seeds = ", ".join(str(n) for n in sorted(set(points["seeds"])))
    made.table(table_name, table,
               "The practitioner's shape (CartPole whose step waits 2.2 ms, the cartpole learner at batch 32, utd "
               f"0.25), {seeds} seeds a cell: measured env steps/s once learning starts against {prediction} "
               "of that rate, committed before the runs, no refit; the bound is the role the median run's own time "
               "breakdown names, the learner's shares are of its training time"
               + (", the update is what that run paid per update, and the cores busy "
                  "are its processes' CPU over its training time (of 2)"
                  if measured_cpu else ", and the update is what that run paid per update"))
    fitted = points[np.isfinite(points["error"])]
    if not fitted.empty:
        made.number(f"{prefix}Cells", len(fitted), "{:d}")
        made.number(f"{prefix}CellsWithinTwenty", int((fitted["error"].abs() <= 0.2).sum()), "{:d}")
        made.number(f"{prefix}WorstError", 100 * fitted["error"].abs().max(), "{:.0f}")
        # the same miss with its sign (measured / predicted - 1: below 0, the model over-predicted)
        made.number(f"{prefix}WorstSigned", 100 * fitted.loc[fitted["error"].abs().idxmax(), "error"], "{:+.0f}")
        made.number(f"{prefix}OverPredictedCount", int((fitted["error"] < 0).sum()), "{:d}")
        made.number(f"{prefix}MedianError", 100 * fitted["error"].median(), "{:+.0f}")
        # the misses by side, as 'actor_learner at 16 and 24 and vector_env at 4' ('none' where none)
        for side, missed in (("over predicted", fitted[fitted["error"] < -0.2]),
                             ("under predicted", fitted[fitted["error"] > 0.2])):
            cells = [f"{arch} at {_and(group['num_workers'])}" for arch, group in missed.groupby("design",
                                                                                                sort=False)]
            made.number(macro_name(prefix, side), _and(cells) if cells else "none")
    # how the sweep ran, from the runs' stored configs: seeds a cell, their range, the env's wait,
    # the learner's batch and the actors' nice
    made.number(f"{prefix}Seeds", int(points["seeds"].min()), "{:d}")
    made.number(f"{prefix}SeedsFirst", int(runs["seed"].min()), "{:d}")
    made.number(f"{prefix}SeedsLast", int(runs["seed"].max()), "{:d}")
    waits = runs["config"].map(lambda c: c.get("env_step_wait_us")).dropna()
    if not waits.empty:
        made.number(f"{prefix}WaitMs", float(waits.mode().iloc[0]) / 1000, "{:g}")
    batch = runs["batch_size"].dropna()
    if not batch.empty:
        made.number(f"{prefix}BatchSize", int(batch.mode().iloc[0]), "{:d}")
    nice = runs["config"].map(lambda c: c.get("actor_nice")).dropna()
    if not nice.empty:
        made.number(f"{prefix}ActorNice", int(nice.mode().iloc[0]), "{:d}")
    for arch in ("actor_learner", "vector_env", "hogwild"):
        sub = points[points["design"] == arch]
        if not sub.empty:
            best = sub.loc[sub[SPEED].idxmax()]
            name = f"{prefix}{arch.title().replace('_', '')}"
            made.number(f"{name}Best", best[SPEED])
            made.number(f"{name}BestWorkers", int(best["num_workers"]), "{:d}")
            last = sub.loc[sub["num_workers"].idxmax()]
            made.number(f"{name}LastShareOfBest", 100 * last[SPEED] / best[SPEED], "{:.0f}")
            made.number(f"{name}Last", last[SPEED])
            made.number(f"{name}LastWorkers", int(last["num_workers"]), "{:d}")
            made.number(f"{name}Workers", _and(sub["num_workers"]))
            made.number(f"{name}UpdateAtBest", best["update_us"])
            made.number(f"{name}UpdateAtLast", last["update_us"])
            if np.isfinite(sub["update_us"]).any():
                made.number(f"{name}UpdateMin", sub["update_us"].min())
                made.number(f"{name}UpdateMax", sub["update_us"].max())
            # the fewest workers from which every cell's own breakdown names the learner as the bound
            bound_from = None
            for n, bound in zip(sub["num_workers"], sub["measured_bound"]):
                bound_from = (bound_from or int(n)) if bound == "learner" else None
            if bound_from is not None:
                made.number(f"{name}LearnerBoundFrom", bound_from, "{:d}")
    single = points[points["design"] == "single_env"]
    if not single.empty:
        made.number(f"{prefix}SingleEnv", float(single[SPEED].iloc[0]))
    return made


def plot(report, made: FigureData) -> None:
    from analysis.report.framework.plotting import PALETTE, plt

    points = made.parts["points"]
    fig, ax = plt.subplots(figsize=(5.6, 3.8), layout="constrained")
    for arch in ("actor_learner", "vector_env", "hogwild"):
        sub = points[points["design"] == arch]
        if sub.empty:
            continue
        x = sub["num_workers"].to_numpy()
        ax.errorbar(x, sub[SPEED], yerr=[sub[SPEED] - sub["low"], sub["high"] - sub[SPEED]],
                    marker="o", ms=4, capsize=2, color=PALETTE[arch], label=f"{arch} (median, min-max over seeds)")
        if np.isfinite(sub[PREDICTED]).any():
            ax.plot(x, sub[PREDICTED], "--", lw=1, color=PALETTE[arch], alpha=0.8)
    single = points[points["design"] == "single_env"]
    if not single.empty:
        ax.axhline(float(single[SPEED].iloc[0]), color=PALETTE["single_env"], lw=1, label="single_env")
    # the practitioner's curve: their numbers as they reported them, not our stored runs
    ax.errorbar(PRACTITIONER["workers"], PRACTITIONER["env_steps_per_sec"],
                yerr=[PRACTITIONER["env_steps_per_sec"] - PRACTITIONER["low"],
                      PRACTITIONER["high"] - PRACTITIONER["env_steps_per_sec"]],
                color="black", marker="s", ms=5, capsize=3, lw=1.5,
                label=f"the practitioner ({PRACTITIONER_CORES} cores, their env)")
    ax.plot([], [], "--", color="grey", lw=1, label="cost model, predicted before the runs")
    ax.set_xlabel("workers (actor processes, envs or hogwild workers)")
    ax.set_ylabel("env steps/s once learning starts\n(the practitioner's: as reported)")
    ax.set_xticks(sorted(set(points["num_workers"]) | set(PRACTITIONER["workers"])))
    sweep = made.parts["sweep"]
    ax.set_title("2 cores, an env step that waits 2.2 ms, the learner at utd 0.25")
    ax.grid(alpha=0.3)
    # the key under the axes: inside, it covered the measured points at 12 and 16 workers
    fig.legend(loc="outside lower center", ncol=2, frameon=False)
    report.figure(fig, FIGURES[sweep], made.data)
