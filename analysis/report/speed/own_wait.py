"""A user env that blocks, with no config key saying so: plan's predictions against the runs.

Reads the `own_wait` sweep (tests.remote_envs:RemoteCartPole-v0, whose step waits ~3 ms on
another process) and the predictions `experiments.plan.predict own_wait` wrote before its runs, from
the plan that told the wait from the env's work by itself (plan/plan.json beside them). Nothing is
refitted: each cell's error is reported, and whether it is within the 25% the check asked for.
"""

from __future__ import annotations

import numpy as np

from analysis.io.load import RunSet
from analysis.report.framework.common import FigureData, Note, committed
from analysis.report.speed.shape import shape_cells, prediction_plan

PREDICTIONS = committed("results", "reference", "own_wait", "predicted.json")
"""Written by `python -m experiments.plan.predict own_wait ...` and committed before the sweep ran."""
WITHIN = 0.25
"""The check's tolerance: a cell's median run within 25% of its committed prediction."""


def data(rs: RunSet, note: Note) -> FigureData | None:
    made = shape_cells(rs, note, "own_wait", PREDICTIONS, "own_wait_model", "OwnWait",
                  "plan's prediction from the wait it told apart itself")
    if made is None:
        return None
    points = made.parts["points"]
    plan = prediction_plan(PREDICTIONS)
    told = ""
    if plan is not None:
        costs = plan["component_costs_us"]
        step, wait = costs["env_step"], costs.get("env_wait") or {}
        own = float(wait.get("own_us", 0.0))
        made.number("OwnWaitToldUs", own)
        made.number("OwnWaitWorkUs", float(step["us"]), "{:,.1f}")
        made.number("OwnWaitWallUs", float(step.get("wall_us", step["us"])))
        told = (f"; plan measured the step at {step.get('wall_us', step['us']):,.0f} us of wall time and told "
                f"{own:,.0f} us of it a wait (wall time neither CPU nor queued for one), {step['us']:,.1f} us work")
        best = plan.get("recommended") or {}
        if best:
            made.number("OwnWaitRecommended", f"{best['design']} ({best['workers']})")
    fitted = points[np.isfinite(points["error"])]
    if not fitted.empty:
        made.number("OwnWaitCellsWithinTwentyFive", int((fitted["error"].abs() <= WITHIN).sum()), "{:d}")
    name, table, _ = made.tables[0]
    seeds = ", ".join(str(n) for n in sorted(set(points["seeds"])))
    made.tables[0] = (name, table, (
        "A user env whose step blocks ~3 ms on another process and no config key saying so "
        f"(tests.remote_envs:RemoteCartPole-v0, the cartpole learner at utd 0.25), {seeds} seeds a cell, one run "
        "at a time: measured env steps/s against plan's predictions committed before the runs, no refit" + told +
        "; the bound is the role the median run's own time breakdown names"))
    return made
