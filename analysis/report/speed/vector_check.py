"""Speed checks: vector_env and pqn stepping their envs as each is ready, against the
cost model's predictions committed before the `vector_check` sweep ran.

Reads the sweep's runs made one at a time, their env steps/s once learning starts (SPEED), and the
predictions of that rate `experiments.plan.predict vector_check --cells <setting>` wrote per setting
(PREDICTIONS, their PREDICTION_KEY), from each setting's own components. Nothing
is refitted: a miss is reported as it is (tables/vector_check_model), and beside it the
acceptance ratios, taken within each seed (the sweep runs seed by seed, so a seed's cells ran back
to back): vector_env (2) over single_env where the step is busy for 1 ms, vector_env over
actor_learner at 4 and 8 where it waits 2 ms; each their median over seeds and their range.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

from analysis.io.load import RunSet
from analysis.report.framework.common import SPEED, FigureData, Note, made_alone, macro_name, predicted_speed, with_speed

FOLDER = os.path.join("results", "reference", "vector_check", "predicted")
PREDICTIONS = {"busy": os.path.join(FOLDER, "cartpole_busy.json"), "wait": os.path.join(FOLDER, "cartpole_wait.json"),
               "pqn CartPole": os.path.join(FOLDER, "cartpole_pqn.json"),
               "pqn Breakout": os.path.join(FOLDER, "breakout_pqn.json")}
"""Per setting, `experiments.plan.predict vector_check --cells ...` (results/README.md), committed first."""
SETTINGS = {"busy": "CartPole, 1 ms busy env step", "wait": "CartPole, env step waits 2 ms",
            "pqn CartPole": "CartPole, free env step", "pqn Breakout": "MinAtar Breakout, free env step"}
RATIOS = [("busy", "vector_env", 2, "single_env", 1), ("wait", "vector_env", 4, "actor_learner", 4),
          ("wait", "vector_env", 8, "actor_learner", 8)]
"""The acceptance ratios: (setting, design, workers) over (design, workers) of the same seed."""


def setting(config: dict, architecture: str, env: str) -> str:
    """Which of SETTINGS a run of the sweep belongs to, from its config."""
    if float(config.get("env_step_wait_us") or 0) > 0:
        return "wait"
    if float(config.get("env_step_cost_us") or 0) > 0:
        return "busy"
    return f"pqn {env}" if architecture == "pqn" else "other"


def data(rs: RunSet, note: Note, paths: dict[str, str] | None = None) -> FigureData | None:
    runs = rs.runs
    runs = runs[(runs["sweep"] == "vector_check") & made_alone(runs)]
    if runs.empty:
        note("vector_check: no runs yet; `python -m experiments.sweep vector_check --out "
             "results/reference/vector_check` makes them, after their predictions are committed")
        return None
    runs = with_speed(runs, note, "vector_check")
    if runs.empty:
        return None
    runs = runs.assign(setting=[setting(c, a, e) for c, a, e in zip(runs["config"], runs["design"], runs["env"])])
    rows = []
    for name, path in (PREDICTIONS if paths is None else paths).items():
        if not os.path.exists(path):
            note(f"vector_check, {SETTINGS[name]}: no predictions at {path}")
            continue
        with open(path) as f:
            predicted = {(p["design"], int(p["workers"])): p for p in json.load(f)["predictions"]}
        for (design, workers), group in runs[runs["setting"] == name].groupby(["design", "num_workers"]):
            p = predicted.get((design, int(workers)))
            if p is None:
                continue
            forecast = predicted_speed(p)
            if not np.isfinite(forecast):
                note(f"vector_check, {SETTINGS[name]}: {path} predicts no env steps/s once learning for {design} "
                     f"({int(workers)}); that cell is left out")
                continue
            speeds = group[SPEED].astype(float)
            rows.append({"setting": name, "design": design, "workers": int(workers), "runs": len(group),
                         "predicted": forecast, "bound": p["bottleneck"],
                         "measured": float(speeds.median()), "low": float(speeds.min()), "high": float(speeds.max()),
                         "miss": float(speeds.median()) / forecast - 1})
    if not rows:
        note("vector_check: runs, but none with a committed prediction")
        return None
    made = FigureData(pd.DataFrame(rows))
    table = made.data
    made.table("vector_check_model", pd.DataFrame({
        "setting": table["setting"].map(SETTINGS), "design": table["design"], "workers": table["workers"],
        "runs": table["runs"], "predicted env steps/s once learning": table["predicted"].map("{:,.0f}".format),
        "measured, median (range)": [f"{m:,.0f} ({lo:,.0f}-{hi:,.0f})" for m, lo, hi in
                                     zip(table["measured"], table["low"], table["high"])],
        "measured / predicted - 1": table["miss"].map(lambda v: f"{100 * v:+.0f}%"),
        "bound by (predicted)": table["bound"]}),
        "vector_env and pqn stepping their envs as each is ready: env steps/s once learning starts predicted per "
        "setting by "
        "the cost model from that setting's components, committed before the runs, against the vector_check "
        "sweep's runs made one at a time (the median over seeds, their range in brackets)")
    for row in rows:
        made.number(macro_name("vector check", row["setting"], row["design"], row["workers"], "miss"),
                    100 * row["miss"], "{:+.0f}")
    misses = np.array([row["miss"] for row in rows])  # the paper's row among the cost model's tests
    made.number("VectorCheckCells", len(misses), "{:d}")
    made.number("VectorCheckCellsWithinTwenty", int((np.abs(misses) <= 0.2).sum()), "{:d}")
    made.number("VectorCheckOverPredictedCount", int((misses < 0).sum()), "{:d}")
    made.number("VectorCheckWorstError", 100 * float(np.abs(misses).max()), "{:.0f}")
    made.number("VectorCheckWorstSigned", 100 * float(misses[np.argmax(np.abs(misses))]), "{:+.0f}")
    made.number("VectorCheckSeeds", int(max(row["runs"] for row in rows)), "{:d}")
    ratios = []
    for name, design, workers, over, over_workers in RATIOS:
        pick = runs[runs["setting"] == name]
        top = pick[(pick["design"] == design) & (pick["num_workers"] == workers)].set_index("seed")
        base = pick[(pick["design"] == over) & (pick["num_workers"] == over_workers)].set_index("seed")
        seeds = sorted(set(top.index) & set(base.index))
        if not seeds:
            continue
        per_seed = np.array([float(top.loc[s, SPEED]) / float(base.loc[s, SPEED]) for s in seeds])
        ratios.append({"setting": SETTINGS[name], "ratio": f"{design} ({workers}) / {over} ({over_workers})",
                       "seeds": len(seeds), "median": float(np.median(per_seed)), "low": float(per_seed.min()),
                       "high": float(per_seed.max())})
        made.number(macro_name("vector check", name, design, workers, "over", over), float(np.median(per_seed)),
                    "{:.2f}")
    if ratios:
        frame = pd.DataFrame(ratios)
        made.table("vector_check_ratios", pd.DataFrame({
            "setting": frame["setting"], "ratio": frame["ratio"], "seeds": frame["seeds"],
            "median (range)": [f"{m:.2f} ({lo:.2f}-{hi:.2f})" for m, lo, hi in
                               zip(frame["median"], frame["low"], frame["high"])]}),
            "the speed ratios (env steps/s once learning starts) the asynchronous vector path was built to reach "
            "(vector_env (2) against single_env at a "
            "1 ms busy step, vector_env against actor_learner where the step waits), from the vector_check runs, "
            "each taken within a seed (its cells ran "
            "back to back): their median over seeds and their range")
    return made
