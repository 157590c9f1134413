"""11. pqn on CartPole (the `pqn` sweep): does it solve CartPole at CleanRL's budget, and where does it
stand against single_env and actor_learner per env step and per second?

pqn runs 500k env steps (CleanRL's budget, chosen on calibration seeds: results/calibration/
pqn_cartpole), the headline's designs 100k, so the table compares what each reached and when it
first reached the solved threshold, not returns at one budget. Per second, each design's env
steps/s is the side-by-side bench's (SIDE_BY_SIDE: each design as the sweeps run it, alternating
within rounds, one run at a time, free env step): pqn at its 4 envs, actor_learner at its 2 actors.
The bench's records hold each run's whole-run rate only (no log to take the rate once learning
from), so these speeds, unlike the stored runs' elsewhere, are over the whole run, and say so.
Seconds to solve are env steps to solve over that speed: a synthetic clock, no run measured them
(the learning runs went two at a time)."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

from analysis import stats
from analysis.io.load import RunSet
from analysis.report.framework.claims import SOLVED_AT
from analysis.report.framework.common import (SPEED, FigureData, Note, ci, sweep_runs, committed, macro_name, predicted_speed,
                                              with_speed)
from analysis.report.learning.curves import solo_runs

COMPARED = ("single_env", "actor_learner")
"""The headline designs pqn is set beside."""


def _first_solved(holdout: pd.DataFrame, run_id: str, threshold: float) -> float:
    """The first checkpoint's env step at which the run's holdout return reached `threshold` (NaN: never)."""
    curve = holdout[holdout["run_id"] == run_id].sort_values("env_step")
    hit = curve[curve["return_mean"] >= threshold]
    return float(hit["env_step"].iloc[0]) if len(hit) else np.nan


def _bench(path: str) -> pd.DataFrame | None:
    """The side-by-side bench's runs at a free env step (experiments.benches.parallel --json), or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        runs = pd.DataFrame(json.load(f))
    return runs[runs["cost_us"] == 0]


def data(rs: RunSet, note: Note, bench: str | None = None) -> FigureData | None:
    runs = rs.runs
    pqn = sweep_runs(runs, "pqn")
    pqn = pqn[pqn["env"] == "CartPole"]
    if pqn.empty:
        note("pqn: no runs of the `pqn` sweep; run `python -m experiments.sweep pqn --jobs 2 --nice`")
        return None
    threshold = SOLVED_AT["CartPole"]
    headline = sweep_runs(runs, "architectures")
    groups = {"pqn": pqn} | {a: headline[(headline["env"] == "CartPole") & (headline["design"] == a)]
                             for a in COMPARED}
    side = _bench(SIDE_BY_SIDE["CartPole"] if bench is None else bench)
    if side is None:
        note("pqn: no side-by-side bench of CartPole; its speeds are left out (see SIDE_BY_SIDE)")
    # the bench's whole-run rates: not stored runs, and it logs no rate once learning (the caption says so)
    speeds = {} if side is None else {a: g["env_steps_per_sec"].to_numpy() for a, g in side.groupby("arch")}
    rows, made_rows = [], []
    for design, group in groups.items():
        if group.empty:
            note(f"pqn: no CartPole headline runs of {design}; its row is left out")
            continue
        first = np.array([_first_solved(rs.holdout, r, threshold) for r in group["run_id"]])
        final = group["final_holdout_return"].to_numpy(dtype=float)
        solved = first[np.isfinite(first)]
        speed = speeds.get(design, np.array([]))
        speed_median = float(np.median(speed)) if len(speed) else np.nan
        seconds = np.median(solved) / speed_median if len(solved) and np.isfinite(speed_median) else np.nan
        budget = int(group["total_env_steps"].iloc[0])
        workers = int(group["num_workers"].iloc[0])  # the runs' own count: pqn's envs, the headline's actors
        rows.append({"design": f"{design} ({workers})" if design != "single_env" else design,
                     "budget (env steps)": f"{budget:,}", "seeds": len(group),
                     f"final >= {threshold:.0f}": f"{int((final >= threshold).sum())} of {len(group)}",
                     f"reached {threshold:.0f} at a checkpoint": f"{len(solved)} of {len(group)}",
                     "env steps to first reach it, median [95% CI]":
                         ci(*stats.interval(solved, "median"), "{:,.0f}") if len(solved) else "-",
                     "final holdout IQM [95% CI]": ci(*stats.interval(final, "iqm"), "{:.1f}"),
                     "env steps/s side by side (rounds)": f"{speed_median:,.0f} ({len(speed)})" if len(speed) else
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
               f"final return's IQM, the median env steps/s over the whole run of the side-by-side bench (each design "
               f"as the sweeps run it, alternating within rounds, one at a time, free env step; its rounds in "
               f"brackets; the bench logs no rate once learning) and the "
               f"median env steps to solve over that speed (a synthetic clock)")
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


SPEED_PREDICTIONS = {"CartPole": committed("results", "reference", "scaling", "pqn_predicted", "cartpole_cost0.json"),
                     "Breakout": committed("results", "reference", "scaling", "pqn_predicted",
                                              "minatar_breakout_cost0.json")}
"""pqn's speeds per game (CartPole at 1-4 envs, Breakout at 1-2), predicted by its cost-model entry from
components measured alone on that game and committed before the scaling sweep's pqn runs of it existed
(experiments/plan/predict.py; Breakout's after CartPole's misses were reported, with the entry unchanged)."""


def _macro_prefix(game: str) -> tuple[str, ...]:
    """CartPole's macros are PqnPredictedOne ...; another game's carry its name: PqnBreakoutPredictedOne."""
    return ("pqn",) if game == "CartPole" else ("pqn", game)


def speed_check_data(rs: RunSet, note: Note, paths: dict[str, str] | None = None) -> FigureData | None:
    """pqn's predicted env steps/s once learning (the committed file's PREDICTION_KEY) against the
    scaling sweep's runs of it, one at a time, free env step, their SPEED, per game: each prediction is
    out of sample, and a miss is reported as it is
    (tests/test_report_pqn.py::test_the_speed_check_sets_the_committed_prediction_beside_the_runs_made_alone)."""
    rows = []
    for game, path in (SPEED_PREDICTIONS if paths is None else paths).items():
        if not os.path.exists(path):
            note(f"pqn speed check, {game}: no predictions at {path}; make them with experiments.plan.predict before the runs")
            continue
        with open(path) as f:
            record = json.load(f)
        predicted = {int(r["workers"]): r for r in record["predictions"] if r["design"] == "pqn"}
        costs = record["component_costs_us"]
        runs = with_speed(solo_runs(rs, game, "pqn"), note, f"pqn speed check, {game}")
        if runs.empty:
            note(f"pqn speed check, {game}: no scaling runs of pqn yet; run `python -m experiments.sweep scaling "
                 f"--cells <{game}'s named config>/pqn/env_step_cost_us=0 --seeds 3`")
            continue
        for n, group in runs.groupby("num_workers"):
            if int(n) not in predicted:
                continue
            measured = float(group[SPEED].median())
            p = predicted[int(n)]
            forecast = predicted_speed(p)
            if not np.isfinite(forecast):
                note(f"pqn speed check, {game}: {path} predicts no env steps/s once learning for {int(n)} envs; "
                     "that cell is left out")
                continue
            loop = _in_loop(group)
            rows.append({"game": game, "envs": int(n), "runs": len(group),
                         "predicted": forecast, "measured": measured,
                         "measured_low": float(group[SPEED].min()),
                         "measured_high": float(group[SPEED].max()),
                         "miss": measured / forecast - 1,
                         "bound by (predicted)": p["bottleneck"],
                         "trip_loop": loop["trip"], "trip_alone": _alone(costs, "vector_round_trip", int(n)),
                         "learn_loop": loop["learn"], "learn_alone": _alone(costs, "rollout_learn", int(n))})
    if not rows:
        return None
    data = pd.DataFrame(rows)
    made = FigureData(data)
    made.table("pqn_speed_check", pd.DataFrame({
        "game": data["game"], "envs": data["envs"], "runs": data["runs"],
        "predicted env steps/s once learning": data["predicted"].map("{:,.0f}".format),
        "measured, median (range)": [f"{m:,.0f} ({lo:,.0f}-{hi:,.0f})" for m, lo, hi in
                                     zip(data["measured"], data["measured_low"], data["measured_high"])],
        "measured / predicted - 1": data["miss"].map(lambda v: f"{100 * v:+.0f}%"),
        "bound by (predicted)": data["bound by (predicted)"],
        "round trip, us: in the loop / alone": [f"{a:,.0f} / {b:,.0f}" for a, b in zip(data["trip_loop"],
                                                                                      data["trip_alone"])],
        "learning per env step, us: in the loop / alone": [f"{a:,.0f} / {b:,.0f}" for a, b in
                                                           zip(data["learn_loop"], data["learn_alone"])]}),
        "pqn's env steps/s once learning starts (free env step, 2 cores), predicted per game by its cost-model "
        "entry from components "
        "measured alone and committed before the runs, against the scaling sweep's runs of it made one at a time "
        "(the median over seeds, their range in brackets); and two of the model's inputs as the runs' own timers "
        "paid them against their cost alone: a vector step's round trip (the envs' step included) and the learning "
        "per env step")
    for r in rows:
        prefix = _macro_prefix(r["game"])
        made.number(macro_name(*prefix, "predicted", r["envs"]), r["predicted"])
        made.number(macro_name(*prefix, "measured", r["envs"]), r["measured"])
        made.number(macro_name(*prefix, "miss", r["envs"]), 100 * r["miss"], "{:+.0f}")
        for key in ("trip_loop", "trip_alone", "learn_loop", "learn_alone"):
            made.number(macro_name(*prefix, key, r["envs"]), r[key])
    return made


def _alone(costs: dict, name: str, n: int) -> float:
    """A per-N component's median alone (us), as the prediction used it (interpolated where not measured)."""
    from analysis.cost.model import at_n

    return at_n({int(k): v["us"] for k, v in costs[name].items()}, n)


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


SIDE_BY_SIDE = {"CartPole": committed("results", "benchmarks", "pqn_side_by_side", "cartpole_cost0.json"),
                "Breakout": committed("results", "benchmarks", "pqn_side_by_side", "minatar_breakout_cost0.json")}
"""`experiments.benches.parallel --named <game's config> --costs 0 --archs single_env actor_learner pqn`: each
design as the sweeps run it, alternating within each round, one run at a time (results/README.md)."""


def side_by_side_data(rs: RunSet, note: Note, paths: dict[str, str] | None = None) -> FigureData | None:
    """pqn's speed beside single_env's and actor_learner's measured side by side: per round, each design's
    env steps/s over single_env's in that round, so the machine's drift between rounds cancels; the median
    over rounds with their range (for 5 rounds, the range holds the median ratio with probability
    1 - 2 / 2^5 = 94%). `rs` is unused: the bench's runs are no Sacred runs
    (tests/test_report_pqn.py::test_side_by_side_ratios_are_taken_within_rounds)."""
    rows = []
    for game, path in (SIDE_BY_SIDE if paths is None else paths).items():
        runs = _bench(path)
        if runs is None:
            note(f"pqn side by side, {game}: no bench at {path}; run `python -m experiments.benches.parallel --named "
                 f"<{game}'s config> --costs 0 --archs single_env actor_learner pqn --json {path}`")
            continue
        # the bench's whole-run rates: not stored runs, no log to take the rate once learning from
        speed = runs.pivot_table(index="round", columns="arch", values="env_steps_per_sec")
        for arch in speed.columns:
            ratio = (speed[arch] / speed["single_env"]).to_numpy()
            n = int(runs.loc[runs["arch"] == arch, "num_workers"].iloc[0]) if arch != "single_env" and \
                "num_workers" in runs else 1
            rows.append({"game": game, "design": arch, "workers": n, "rounds": len(speed),
                         "speed": float(speed[arch].median()), "speed_low": float(speed[arch].min()),
                         "speed_high": float(speed[arch].max()), "ratio": float(np.median(ratio)),
                         "ratio_low": float(ratio.min()), "ratio_high": float(ratio.max())})
    if not rows:
        return None
    data = pd.DataFrame(rows)
    made = FigureData(data)
    made.table("pqn_side_by_side", pd.DataFrame({
        "game": data["game"], "design": [d if d == "single_env" else f"{d} ({n})" for d, n in
                                         zip(data["design"], data["workers"])],
        "rounds": data["rounds"],
        "env steps/s, median (range)": [f"{m:,.0f} ({lo:,.0f}-{hi:,.0f})" for m, lo, hi in
                                        zip(data["speed"], data["speed_low"], data["speed_high"])],
        "x single_env in its round, median (range)": [f"{m:.2f} ({lo:.2f}-{hi:.2f})" for m, lo, hi in
                                                      zip(data["ratio"], data["ratio_low"], data["ratio_high"])]}),
        "pqn beside single_env and actor_learner, measured side by side: each design as the sweeps run it, a "
        "free env step, evaluation off, the designs alternating within each round, one run at a time on the "
        "otherwise idle machine (experiments.benches.parallel --named); speeds are over the whole run. Read from the "
        "committed benchmark, not from this report's runs: "
        + ", ".join(os.path.relpath(p, committed()) for p in (SIDE_BY_SIDE if paths is None else paths).values()
                    if _bench(p) is not None))
    for r in rows:
        if r["design"] == "single_env":
            continue
        for suffix, value in (("", r["ratio"]), ("low", r["ratio_low"]), ("high", r["ratio_high"])):
            made.number(macro_name("pqn", "side", r["game"], r["design"], *[suffix][:bool(suffix)]), value, "{:.2f}")
        made.number(macro_name("pqn", "side", r["game"], "rounds"), r["rounds"], "{}")
        # the chance that the median ratio lies within the rounds' range: 1 - 2 (1/2)^rounds
        made.number(macro_name("pqn", "side", r["game"], "coverage"), 100 * (1 - 2 * 0.5 ** r["rounds"]), "{:.0f}")
    return made
