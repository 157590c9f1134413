"""Which stored runs a figure reads: a sweep's, the headline's (diverged runs apart), the speeds
made alone, the curves on their group's checkpoint grid, and how a caption names them. Split
from common.py, which re-exports every name."""

from __future__ import annotations

from collections import Counter
from typing import Callable

import numpy as np
import pandas as pd

from analysis.io.load import LEARNING_RATE, TRAINING_EXPERIMENTS

Note = Callable[[str], None]
"""Where a data function says what it left out (build passes Report.note; tests pass list.append)."""


def sweep_runs(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    """The runs of one named sweep."""
    return runs[runs["sweep"] == name]


def holdout_auc(holdout: pd.DataFrame, run_ids: pd.Series) -> pd.Series:
    """Each run's mean holdout return over its checkpoints (the area under its curve, per
    checkpoint), aligned with `run_ids`."""
    return run_ids.map(holdout[holdout["run_id"].isin(run_ids)].groupby("run_id")["return_mean"].mean())


def made_alone(runs: pd.DataFrame) -> pd.Series:
    """Whether each run's env steps/s is a measurement: it was made alone, not by a sweep's
    `--jobs N` beside N - 1 others (`runs_at_once`; runs older than that field count as alone)."""
    return pd.to_numeric(runs["runs_at_once"], errors="coerce").fillna(1) <= 1


SPEED = LEARNING_RATE
"""The one speed the report quotes, tabulates and draws of a stored run: env steps/s once learning
starts (analysis.io.load.learning_rate). A run's own `env_steps_per_sec` averages its warm-up (no
updates, so fast) in, which overstates a short run's speed; it is quoted only where it is itself
the subject (scaling._once_learning)."""
SPEED_COLUMNS = ("env_steps_per_sec", LEARNING_RATE)
"""A run's speeds: over the whole run, and once learning (analysis.io.load.learning_rate)."""
PREDICTED = f"predicted_{SPEED}"
"""A frame's column holding the cost model's prediction of SPEED (PREDICTION_KEY)."""
PREDICTION_KEY = "predicted_steady_env_steps_per_sec"
"""The key of `experiments.plan.predict`'s committed predictions that predicts SPEED: the model's rate at
the run's utd (cost_model.predict), the rate once learning. Their `predicted_env_steps_per_sec` is
over a whole run, warm-up in (cost_model.over_a_run): the whole-run rate's prediction."""


def predicted_speed(prediction: dict | None) -> float:
    """A committed prediction's SPEED (PREDICTION_KEY); NaN where there is none (no prediction, or a
    file from before that key: its whole-run number is never set against SPEED)."""
    return float((prediction or {}).get(PREDICTION_KEY, np.nan))


def speed_missing(runs: pd.DataFrame, note: Note, figure: str, fate: str = "left out of its speeds") -> pd.Series:
    """Whether each run has no SPEED (NaN: no log at or after learning_starts; analysis.io.load.learning_rate);
    each such run made alone is named in a note (`<figure>: run <id> ...; <fate>`). A run made several
    at a time has no speed by rule (speeds_only_where_made_alone) and is not named."""
    missing = runs[SPEED].isna()
    for run_id in sorted(runs.loc[missing & made_alone(runs), "run_id"]):
        note(f"{figure}: run {run_id} has no env steps/s once learning (no log at or after learning_starts); {fate}")
    return missing


def with_speed(runs: pd.DataFrame, note: Note, figure: str) -> pd.DataFrame:
    """`runs` less those with no SPEED, the ones made alone named in a note (speed_missing)."""
    return runs[~speed_missing(runs, note, figure, "left out")]


def speeds_only_where_made_alone(runs: pd.DataFrame) -> pd.DataFrame:
    """A copy of `runs` whose speeds are NaN where a run shared the CPU (not made_alone): a figure
    never quotes them (tests/test_report_data.py::test_speeds_of_runs_made_several_at_once_are_never_quoted)."""
    runs = runs.copy()
    runs.loc[~made_alone(runs), list(SPEED_COLUMNS)] = np.nan
    return runs


DEDICATED_SWEEPS = {"utd", "hogwild", "scaling", "uneven", "seed_shape", "shape_check", "shape_confirm", "per_hour",
                    "minatar_suite", "pqn", "own_wait", "apex_epsilons", "speed", "vector_check",
                    "tensorboard_cost", "wallclock_check", "wallclock_curves"}
"""Sweeps with figures of their own; any other sweep of training runs feeds the headline figures."""
HEADLINE_SWEEPS = ("architectures", "minatar")
"""The headline comparisons at equal env steps, one env each (CartPole; MinAtar Breakout)."""


def env_first(env: str) -> tuple[bool, str]:
    """Sort key of envs in tables and panels: CartPole, the study's first env (whose macros carry
    no env tag), before the others in name order."""
    return env != "CartPole", env


def diverged(runs: pd.DataFrame) -> pd.Series:
    """Whether each run's result says `"diverged": true` (a non-finite TD loss or Q value stopped
    it, or high_utd's |Q| check fired); runs that stored no such field did not."""
    return runs["diverged"].eq(True) if "diverged" in runs else pd.Series(False, index=runs.index)


def runs_read(runs: pd.DataFrame) -> str:
    """Which stored runs a figure or table read, for its caption: `6 runs of the smoke sweep`, or
    `50 runs: 30 of the architectures sweep, 20 of the minatar sweep`; and how many of them were made
    from a tree with uncommitted changes (`dirty`), which no reader should take for a clean commit's."""
    if "sweep" not in runs:
        read = f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
    else:
        sweeps = runs["sweep"].fillna("").astype(str).value_counts().sort_index()
        where = {s: f"the {s} sweep" if s else "no sweep" for s in sweeps.index}
        if len(sweeps) == 1:
            read = f"{len(runs)} run{'s' if len(runs) != 1 else ''} of {where[sweeps.index[0]]}"
        else:
            read = f"{len(runs)} runs: " + ", ".join(f"{n} of {where[s]}" for s, n in sweeps.items())
    return read + dirty_mark(runs)


def dirty_mark(runs: pd.DataFrame) -> str:
    """`` (clean), or `; 3 of them from a dirty tree`: every caption marks the runs made from
    uncommitted code (their record says `dirty`; newer ones store the diff beside it)."""
    if "git_dirty" not in runs or runs.empty:
        return ""
    dirty = int((runs["git_dirty"] == True).sum())  # noqa: E712 - None (unknown) is not dirty
    if not dirty:
        return ""
    return f"; {'all' if dirty == len(runs) else dirty} of them from a dirty tree"


def headline_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Every run of the headline comparison, diverged ones included: the headline sweeps, or else
    every training run outside the dedicated sweeps (e.g. `smoke`, or your own sweep)."""
    chosen = runs[runs["sweep"].isin(HEADLINE_SWEEPS)]
    if chosen.empty:
        chosen = runs[runs["experiment"].isin(TRAINING_EXPERIMENTS) & ~runs["sweep"].isin(DEDICATED_SWEEPS)]
    return chosen


def headline(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that compare architectures at equal env steps (headline_runs), less those that
    diverged: a diverged run is never an ordinary row of the headline's IQMs and intervals; the
    architectures table counts them beside each design instead (learning.speed_quality_data;
    tests/test_report_stores.py::test_a_diverged_run_is_counted_apart_from_the_headline). The utd
    grid, whose question is divergence, keeps its runs."""
    chosen = headline_runs(runs)
    return chosen[~diverged(chosen)]


def diverged_line(runs: pd.DataFrame) -> str | None:
    """`n of m headline runs diverged and are left out: <run ids>`, or None where none did."""
    chosen = headline_runs(runs)
    out = chosen.loc[diverged(chosen), "run_id"].sort_values()
    if out.empty:
        return None
    return f"{len(out)} of {len(chosen)} headline runs diverged and are left out: {', '.join(out)}"


def arch_label(row) -> str:
    """A run's design as the tables name it: with its worker count, or its utd for high_utd."""
    if row["design"] in ("single_env", "high_utd"):
        label = row["design"] if row["design"] == "single_env" else f"high_utd (utd {row['utd']:g})"
    else:
        label = f"{row['design']} ({int(row['num_workers'])})"
    overrides = row.get("overrides") if hasattr(row, "get") else None
    return f"{label} [{overrides}]" if isinstance(overrides, str) and overrides else label  # a sweep's `with ...`


def regular_curves(note: Note, holdout: pd.DataFrame, figure: str) -> pd.DataFrame:
    """Keep runs whose checkpoint grid matches their group's most common grid; name the others."""
    keep = []
    for _, group in holdout.groupby(["env", "design", "num_workers"], sort=True):
        grids = group.groupby("run_id")["env_step"].apply(tuple)
        usual = Counter(grids).most_common(1)[0][0]
        for run_id, grid in grids.items():
            if grid != usual:
                note(f"{figure}: run {run_id} has holdout checkpoints {list(grid)[:4]}... unlike the "
                     f"{list(usual)[:4]}... of its group; left out of this figure")
        keep.extend(grids[grids == usual].index)
    return holdout[holdout["run_id"].isin(keep)]
