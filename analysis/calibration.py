"""A calibration sweep's cells side by side, and the one a stated rule picks.

    python -m analysis.calibration --runs results/calibration/calibrate_breakout --upto 500000

For every cell (the config keys the runs differ in, seeds pooled): each seed's final holdout
return, the mean holdout return over the checkpoints up to `--upto` env steps, and their means
over seeds. The rule is fixed before the runs are read: the cell with the best mean (over seeds)
of the mean holdout over checkpoints up to the budget the config is for, which rewards learning
early and uses every checkpoint rather than one noisy last one. Calibration numbers choose a
config; they are never quoted as results (evaluation seeds are).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from analysis.io.load import NoRunsError, load_runs
from analysis.report.framework.common import markdown

KEYS = ["n_step", "lr", "utd", "target_update_period"]
"""The config keys a calibration grid varies (those present and not constant form a cell)."""


def cells(runs: pd.DataFrame, holdout: pd.DataFrame, upto: int) -> pd.DataFrame:
    """One row per cell: its keys, seeds, per-seed final and mean-up-to-`upto` returns, means."""
    varying = [k for k in KEYS if k in runs and runs[k].nunique(dropna=True) > 1] or [k for k in KEYS if k in runs][:1]
    early = holdout[holdout["env_step"] <= upto].groupby("run_id")["return_mean"].mean()
    runs = runs.assign(early=runs["run_id"].map(early))
    rows = []
    for values, group in runs.groupby(varying, sort=True):
        values = values if isinstance(values, tuple) else (values,)
        group = group.sort_values("seed")
        rows.append({**{k: f"{v:g}" for k, v in zip(varying, values)}, "seeds": ", ".join(str(s) for s in group["seed"]),
                     "final": ", ".join(f"{v:.1f}" for v in group["final_holdout_return"]),
                     f"mean to {upto:,}": ", ".join(f"{v:.2f}" for v in group["early"]),
                     "final, mean over seeds": float(group["final_holdout_return"].mean()),
                     f"mean to {upto:,}, mean over seeds": float(group["early"].mean())})
    table = pd.DataFrame(rows)
    score = table[f"mean to {upto:,}, mean over seeds"]
    table["chosen"] = np.where(score == score.max(), "yes", "")
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.calibration", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", required=True, help="the calibration sweep's store")
    parser.add_argument("--upto", type=int, required=True, help="env steps the chosen config is for")
    args = parser.parse_args(argv)
    try:
        rs = load_runs([args.runs], cache_dir=None)
    except NoRunsError as err:
        parser.exit(2, f"error: --runs: {err}\n")
    table = cells(rs.runs, rs.holdout, args.upto)
    print(markdown(table.round(2)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
