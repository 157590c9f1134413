"""What a claim rests on, shared by every table that makes one: the solved line and the cap per
env, the level a corrected test is held to and the word a comparison may carry, and what a run did
after it first solved the task (the stability table and the utd sweep's long cells), and the two
families a table's comparisons are corrected in (compare_measures)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import stats
from analysis.report.framework.selection import SPEED

SOLVED_AT = {"CartPole": 475.0}
"""The final holdout return counted as solved, per env (CartPole-v1's own threshold): the table and
the macros <Env><Design>Solved count the seeds that reached it."""
CAP = {"CartPole": 500.0}
"""The most an episode can return, per env: a run that reached it had solved the task."""
ALPHA = 0.05
P_FORMAT = "{:.3f}"
EQUIVALENCE_MARGIN = 0.10
"""The margin of "learns as well", a share of each env's return scale (docs/learning-at-scale.md): the
same for every comparison that can say it (at scale, the CartPole improvement table, the MinAtar suite)."""


def verdict(probability: float, corrected_p: float) -> str:
    """The word a comparison may carry: told apart (better or worse, by the side of 0.5 its
    probability of improvement is on) only where the Holm-corrected rank test's p is below ALPHA,
    else not told apart (tests/test_report_data.py)."""
    if not np.isfinite(corrected_p) or corrected_p >= ALPHA:
        return "not told apart"
    return "told apart, better" if probability > 0.5 else "told apart, worse"


def after_solving(holdout: pd.DataFrame, run_ids, cap: float, solved: float) -> dict:
    """What a group of runs did after first reaching the cap: how many reached it, how many of those
    fell below `solved` at a later checkpoint, the share of the checkpoints after the first at the cap
    that were below it, and the median drop (the cap less the lowest return after), over the runs
    that reached it (stability_data; utd.long_data)."""
    reached = fell = below = after_count = 0
    drops = []
    for run_id in run_ids:
        curve = holdout[holdout["run_id"] == run_id].sort_values("env_step")["return_mean"].to_numpy()
        at_cap = np.flatnonzero(curve >= cap)
        if not len(at_cap):
            continue
        reached += 1
        after = curve[at_cap[0] + 1:]
        fell += int((after < solved).any())
        below += int((after < solved).sum())
        after_count += len(after)
        drops.append(cap - after.min() if len(after) else 0.0)
    return {"reached_cap": reached, "fell_below_solved": fell,
            "share_below_after_cap": below / after_count if after_count else np.nan,
            "median_drop": float(np.median(drops)) if drops else np.nan}


SPEED_MEASURE = SPEED
"""The one measure that is not learning (env steps/s once learning starts): a table corrects it apart
from the learning measures."""


def macro_measure(measure: str) -> str:
    """The name a measure's macros carry: SPEED_MEASURE's keep `EnvStepsPerSec` (HogLockPoiEnvStepsPerSec,
    UnevenFreePEnvStepsPerSec, ...), the names the paper's text reads; the value is SPEED's."""
    return "env_steps_per_sec" if measure == SPEED_MEASURE else measure


def compare_measures(mine: pd.DataFrame, theirs: pd.DataFrame, measures) -> dict[str, stats.Comparison]:
    """Two groups of runs compared on each measure both have (NaNs dropped), with Holm's p over the
    learning measures together and over speed alone, the families the hogwild-lock and uneven-quota
    questions keep apart (tests/test_report_data.py)."""
    compared = {m: stats.compare(mine[m].dropna().to_numpy(), theirs[m].dropna().to_numpy()) for m in measures
                if mine[m].notna().any() and theirs[m].notna().any()}
    for family in ([m for m in compared if m != SPEED_MEASURE], [m for m in compared if m == SPEED_MEASURE]):
        compared.update(zip(family, stats.with_holm([compared[m] for m in family])))
    return compared


CPU_FULL = 0.9
"""A run with more workers than cores whose processes kept this share of the cores busy is bound by
the CPU, whatever role its breakdown finds busiest: one rule for the text, the tables and figures."""


def cpu_bound(workers: int, result: dict) -> bool:
    cpu = result.get("cpu") or {}
    return bool(cpu.get("cores")) and workers > cpu["cores"] and cpu.get("cores_busy", 0) >= CPU_FULL * cpu["cores"]


OUT_OF_SAMPLE_WORST = {
    "PlanCartPoleMissFirst": "plan's recommendation on CartPole",
    "ShapeWorstSigned": "the first shape version, superseded",
    "ShapeCheckWorstSigned": "the second shape version",
    "ShapeConfirmWorstSigned": "the third shape version",
    "PqnMissOne": "pqn's entry on CartPole", "PqnMissTwo": "pqn's entry on CartPole",
    "PqnMissThree": "pqn's entry on CartPole", "PqnMissFour": "pqn's entry on CartPole",
    "PqnBreakoutMissOne": "pqn's entry on Breakout", "PqnBreakoutMissTwo": "pqn's entry on Breakout",
    "OwnWaitWorstSigned": "a user env that blocks", "VectorCheckWorstSigned": "the asynchronous vector_env and pqn"}
"""The cost model's out-of-sample tests' worst misses (the macros their families make, signed, in %), with the
test each belongs to: the abstract quotes the largest in size, never one picked by hand."""


def worst_out_of_sample(macros: dict[str, str]) -> tuple[float, str] | None:
    """The largest miss in size among OUT_OF_SAMPLE_WORST's macros that were made, and its test."""
    made = {name: abs(float(macros[name].replace(",", "").lstrip("+"))) for name in OUT_OF_SAMPLE_WORST
            if name in macros}
    if not made:
        return None
    name = max(made, key=made.get)
    return made[name], OUT_OF_SAMPLE_WORST[name]
