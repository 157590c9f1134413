"""The scaling family's checks from other windows: the CartPole cells measured in the window before
the reference set (the miss hogwild's loop at the cores mends, and the window-to-window drift), and
plan's confirming runs, the model's test out of sample."""

from __future__ import annotations

import os
import re

import numpy as np

from analysis import cost_model
from analysis.load import NoRunsError, load_runs
from analysis.report.common import SPEED, FigureData, Note, committed, macro_name

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
                  & (points["architecture"] == "hogwild")].set_index("num_workers")
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
