"""The headline's speeds checked in another window (the MinAtar window check: single_env and
high_utd rerun side by side) and the curves' catch-up numbers on the synthetic clock."""

from __future__ import annotations

import functools
import os

import numpy as np

from analysis.io.load import LEARNING_RATE, NoRunsError, load_runs
from analysis.report.framework.common import FigureData, committed, env_first, macro_name

SPEED = LEARNING_RATE

WINDOW_CHECK = committed("results", "benchmarks", "minatar_window_check")
"""The MinAtar single_env and high_utd `scaling` cells rerun side by side, seed by seed, in the
window in which the reference set's high_utd cell was remade (results/README.md): stored Sacred
runs, kept apart from results/reference/ (their run ids are the reference set's). That window's
single_env against the reference set's says how much slower it was; high_utd against single_env
side by side is the ratio the reference set's high_utd cell, made in that slower window, cannot give."""


@functools.cache
def window_check(path: str = WINDOW_CHECK) -> dict:
    """{(env, design): median env steps/s once learning (SPEED)} of the window check's runs, read
    from the stored benchmark at `path` (found from the package, as shape.PREDICTIONS); {} where it is not there."""
    if not os.path.isdir(path):
        return {}
    try:
        runs = load_runs([path]).runs
    except NoRunsError:
        return {}
    return {key: float(v) for key, v in runs.groupby(["env", "design"])[SPEED].median().items()}


def window_check_numbers(made: FigureData, envs) -> None:
    """<Env>WindowCheck<Design>Steps and <Env>WindowCheckHighUtdSpeedup (high_utd's speed over
    single_env's, side by side), for the envs the headline has."""
    check = window_check()
    for env in sorted(set(envs), key=env_first):
        for (where, arch), speed in sorted(check.items()):
            if where == env:
                made.number(macro_name(env, "window check", arch, "steps"), speed)
        if (env, "single_env") in check and (env, "high_utd") in check:
            made.number(macro_name(env, "window check", "high_utd", "speedup"),
                        check[env, "high_utd"] / check[env, "single_env"], "{:.2f}")


def catch_up(made: FigureData) -> None:
    """On the curves' wall-clock axis: when single_env ended (<Env>SingleEnvEndSeconds), and the
    first checkpoint at which high_utd's IQM reached single_env's final IQM, in env steps and
    seconds (<Env>HighUtdCatchUpSteps, ...Seconds), and in seconds at high_utd's speed measured
    side by side with single_env (...SideBySideSeconds: the window check's ratio times single_env's
    speed on this axis), where the window check has the env."""
    curves = made.data
    for env in curves["env"].unique():
        base = curves[(curves["env"] == env) & (curves["design"] == "single_env")].sort_values("env_step")
        other = curves[(curves["env"] == env) & (curves["design"] == "high_utd")].sort_values("env_step")
        if base.empty:
            continue
        end = base.iloc[-1]
        if not np.isfinite(end["train_seconds_median"]):  # single_env off the wall-clock axis: nothing to say
            continue
        made.number(macro_name(env, "single_env", "end", "seconds"), end["train_seconds_median"])
        reached = other[other["return_iqm"] >= end["return_iqm"]]
        if reached.empty or not np.isfinite(reached.iloc[0]["train_seconds_median"]):
            continue
        first = reached.iloc[0]
        made.number(macro_name(env, "high_utd", "catch up", "steps"), first["env_step"])
        made.number(macro_name(env, "high_utd", "catch up", "seconds"), first["train_seconds_median"])
        check = window_check()
        if (env, "single_env") in check and (env, "high_utd") in check:
            speed = end["env_step"] / end["train_seconds_median"] * check[env, "high_utd"] / check[env, "single_env"]
            made.number(macro_name(env, "high_utd", "catch up", "side by side", "seconds"), first["env_step"] / speed)
