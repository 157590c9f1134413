"""11. pqn on CartPole (the `pqn` sweep): does it solve CartPole at CleanRL's budget, and where does it
stand against single_env and actor_learner per env step and per second (issue 23)?

pqn runs 500k env steps (CleanRL's budget, chosen on calibration seeds: results/calibration/
pqn_cartpole), the headline's designs 100k, so the table compares what each reached and when it
first reached the solved threshold, not returns at one budget. Per second, each design's env
steps/s is the scaling sweep's (runs made one at a time, free env step, learning): pqn at its 4
envs, actor_learner at its headline 2 actors. Seconds to solve are env steps to solve over that
speed: a synthetic clock, no run measured them (the learning runs went two at a time)."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

from analysis import stats
from analysis.load import RunSet
from analysis.report.common import FigureData, Note, _ci, _sweep, macro_name, made_alone
from analysis.report.learning import SOLVED_AT, solo_speeds

COMPARED = ("single_env", "actor_learner")
"""The headline designs pqn is set beside."""


def _first_solved(holdout: pd.DataFrame, run_id: str, threshold: float) -> float:
    """The first checkpoint's env step at which the run's holdout return reached `threshold` (NaN: never)."""
    curve = holdout[holdout["run_id"] == run_id].sort_values("env_step")
    hit = curve[curve["return_mean"] >= threshold]
    return float(hit["env_step"].iloc[0]) if len(hit) else np.nan


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = rs.runs
    pqn = _sweep(runs, "pqn")
    pqn = pqn[pqn["env"] == "CartPole"]
    if pqn.empty:
        note("pqn: no runs of the `pqn` sweep; run `python -m experiments.sweep pqn --jobs 2 --nice`")
        return None
    threshold = SOLVED_AT["CartPole"]
    headline = _sweep(runs, "architectures")
    groups = {"pqn": pqn} | {a: headline[(headline["env"] == "CartPole") & (headline["architecture"] == a)]
                             for a in COMPARED}
    workers = {"pqn": int(pqn["num_workers"].iloc[0]), "single_env": 1, "actor_learner": 2}
    rows, made_rows = [], []
    for design, group in groups.items():
        if group.empty:
            note(f"pqn: no CartPole headline runs of {design}; its row is left out")
            continue
        first = np.array([_first_solved(rs.holdout, r, threshold) for r in group["run_id"]])
        final = group["final_holdout_return"].to_numpy(dtype=float)
        solved = first[np.isfinite(first)]
        speed = solo_speeds(rs, "CartPole", design, workers[design], float(group["utd"].iloc[0]))
        speed_median = float(np.median(speed)) if len(speed) else np.nan
        seconds = np.median(solved) / speed_median if len(solved) and np.isfinite(speed_median) else np.nan
        budget = int(group["total_env_steps"].iloc[0])
        rows.append({"design": f"{design} ({workers[design]})" if design != "single_env" else design,
                     "budget (env steps)": f"{budget:,}", "seeds": len(group),
                     f"final >= {threshold:.0f}": f"{int((final >= threshold).sum())} of {len(group)}",
                     f"reached {threshold:.0f} at a checkpoint": f"{len(solved)} of {len(group)}",
                     "env steps to first reach it, median [95% CI]":
                         _ci(*stats.interval(solved, "median"), "{:,.0f}") if len(solved) else "-",
                     "final holdout IQM [95% CI]": _ci(*stats.interval(final, "iqm"), "{:.1f}"),
                     "env steps/s alone (scaling runs)": f"{speed_median:,.0f} ({len(speed)})" if len(speed) else
                     "not measured", "seconds to reach it (synthetic)": f"{seconds:,.0f}" if np.isfinite(seconds)
                     else "-"})
        made_rows.append({"design": design, "seeds": len(group), "final_solved": int((final >= threshold).sum()),
                          "reached": len(solved), "first_median": np.median(solved) if len(solved) else np.nan,
                          "final_iqm": stats.iqm(final), "speed": speed_median, "seconds": seconds})
    made = FigureData(pd.DataFrame(made_rows))
    made.table("pqn_cartpole", pd.DataFrame(rows),
               f"pqn on CartPole at 500k env steps (the pqn sweep, evaluation seeds) beside the headline's single_env "
               f"and actor_learner at 100k: the runs whose final holdout return was at least {threshold:.0f}, the "
               f"runs that reached it at some checkpoint and the median env step of the first such checkpoint, the "
               f"final return's IQM, the env steps/s of the scaling sweep's runs (one at a time, free env step; "
               f"their count in brackets) and the median env steps to solve over that speed (a synthetic clock)")
    if "eval_every" in pqn:
        made.number("PqnEvalEvery", int(pqn["eval_every"].iloc[0]))
    first = {r["design"]: r["first_median"] for r in made_rows}
    if np.isfinite(first.get("pqn", np.nan)) and np.isfinite(first.get("single_env", np.nan)):
        made.number("PqnFirstRatio", first["pqn"] / first["single_env"], "{:.1f}")  # pqn's env steps to solve / DQN's
    for r in made_rows:
        d = r["design"]
        made.number(macro_name("pqn", "cmp", d, "seeds"), r["seeds"], "{}")
        made.number(macro_name("pqn", "cmp", d, "final", "solved"), r["final_solved"], "{}")
        made.number(macro_name("pqn", "cmp", d, "reached"), r["reached"], "{}")
        made.number(macro_name("pqn", "cmp", d, "final", "iqm"), r["final_iqm"], "{:.1f}")
        for key, fmt in (("first_median", "{:,.0f}"), ("speed", "{:,.0f}"), ("seconds", "{:,.0f}")):
            value = r[key]
            made.number(macro_name("pqn", "cmp", d, key), value if np.isfinite(value) else "not measured", fmt)
    return made


SPEED_PREDICTIONS = os.path.join("results", "reference", "scaling", "pqn_predicted", "cartpole_cost0.json")
"""pqn's speeds at 1-4 envs, predicted by its cost-model entry from components measured alone and
committed before the scaling sweep's pqn runs existed (experiments/predict.py)."""


def speed_check_data(rs: RunSet, note: Note, path: str = SPEED_PREDICTIONS) -> FigureData | None:
    """pqn's predicted env steps/s (whole run) against the scaling sweep's runs of it, one at a time,
    CartPole, free env step: the prediction is out of sample, and a miss is reported as it is."""
    if not os.path.exists(path):
        note(f"pqn speed check: no predictions at {path}; make them with experiments.predict before the runs")
        return None
    with open(path) as f:
        record = json.load(f)
    predicted = {int(r["workers"]): r for r in record["predictions"] if r["design"] == "pqn"}
    costs = record["component_costs_us"]
    runs = rs.runs
    runs = runs[(runs["sweep"] == "scaling") & (runs["architecture"] == "pqn") & (runs["env"] == "CartPole")
                & (pd.to_numeric(runs["env_step_cost_us"]).fillna(0) == 0) & made_alone(runs)]
    if runs.empty:
        note("pqn speed check: no scaling runs of pqn yet; run `python -m experiments.sweep scaling --cells "
             "cartpole/pqn/env_step_cost_us=0 --seeds 3`")
        return None
    rows = []
    for n, group in runs.groupby("num_workers"):
        if int(n) not in predicted:
            continue
        measured = float(group["env_steps_per_sec"].median())
        p = predicted[int(n)]
        loop = _in_loop(group)
        rows.append({"envs": int(n), "runs": len(group), "predicted": p["predicted_env_steps_per_sec"],
                     "measured": measured, "miss": measured / p["predicted_env_steps_per_sec"] - 1,
                     "bound by (predicted)": p["bottleneck"],
                     "trip_loop": loop["trip"], "trip_alone": _alone(costs, "vector_round_trip", int(n)),
                     "learn_loop": loop["learn"], "learn_alone": _alone(costs, "rollout_learn", int(n))})
    data = pd.DataFrame(rows)
    made = FigureData(data)
    made.table("pqn_speed_check", pd.DataFrame({
        "envs": data["envs"], "runs": data["runs"], "predicted env steps/s": data["predicted"].map("{:,.0f}".format),
        "measured, median": data["measured"].map("{:,.0f}".format),
        "measured / predicted - 1": data["miss"].map(lambda v: f"{100 * v:+.0f}%"),
        "bound by (predicted)": data["bound by (predicted)"],
        "round trip, us: in the loop / alone": [f"{a:,.0f} / {b:,.0f}" for a, b in zip(data["trip_loop"],
                                                                                      data["trip_alone"])],
        "learning per env step, us: in the loop / alone": [f"{a:,.0f} / {b:,.0f}" for a, b in
                                                           zip(data["learn_loop"], data["learn_alone"])]}),
        "pqn's env steps/s on CartPole (free env step, 2 cores), predicted by its cost-model entry from components "
        "measured alone and committed before the runs, against the scaling sweep's runs of it made one at a time "
        "(the median over seeds); and two of the model's inputs as the runs' own timers paid them against their "
        "cost alone: a vector step's round trip (the envs' step included) and the learning per env step")
    for r in rows:
        made.number(macro_name("pqn", "predicted", r["envs"]), r["predicted"])
        made.number(macro_name("pqn", "measured", r["envs"]), r["measured"])
        made.number(macro_name("pqn", "miss", r["envs"]), 100 * r["miss"], "{:+.0f}")
        for key in ("trip_loop", "trip_alone", "learn_loop", "learn_alone"):
            made.number(macro_name("pqn", key, r["envs"]), r[key])
    return made


def _alone(costs: dict, name: str, n: int) -> float:
    """A per-N component's median alone (us), as the prediction used it (interpolated where not measured)."""
    from analysis.cost_model import _at

    return _at({int(k): v["us"] for k, v in costs[name].items()}, n)


def _in_loop(group: pd.DataFrame) -> dict:
    """What the runs' own timers paid (median over runs, us): a vector step's round trip (`env_wait`,
    per vector step) and the learning per env step (the rollouts' targets and updates over the env steps)."""
    trips, learns = [], []
    for result in group["result"]:
        parts = result.get("time_breakdown") or {}
        if "env_wait" in parts:
            trips.append(parts["env_wait"]["us_per_call"])
        seconds = sum(parts.get(k, {}).get("seconds", 0.0) for k in ("targets", "update"))
        if seconds and result.get("env_steps"):
            learns.append(1e6 * seconds / result["env_steps"])
    return {"trip": float(np.median(trips)) if trips else np.nan, "learn": float(np.median(learns)) if learns
            else np.nan}
