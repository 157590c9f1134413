"""What writing TensorBoard event files while a run trains costs (the `tensorboard_cost` sweep).

Each `speed` cell runs with the files on and off, one run at a time, seed by seed, so a round
holds one run of each arm of every cell. The measure is the speed once learning starts
(`learning_env_steps_per_sec`). Per cell: the median over rounds of the paired ratio on / off,
its range, and the off runs' own spread (their max / min - 1 across rounds): the writer's cost is
"within the spread" when the median ratio is less than one spread away from 1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.io.load import LEARNING_RATE, RunSet
from analysis.report.framework.common import FigureData, Note, runs_read

SWEEP = "tensorboard_cost"


def _cells(rs: RunSet) -> pd.DataFrame:
    runs = rs.runs[rs.runs["sweep"] == SWEEP].copy()
    if runs.empty:
        return runs
    runs["tensorboard"] = [bool(c.get("tensorboard", True)) for c in runs["config"]]
    runs["setting"] = ["busy" if (c.get("env_step_cost_us") or 0) > 0 else "waiting" for c in runs["config"]]
    runs["workers"] = [1 if a == "single_env" else int(n) for a, n in zip(runs["design"], runs["num_workers"])]
    return runs


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = _cells(rs)
    if runs.empty:
        note(f"tensorboard cost: no runs of the `{SWEEP}` sweep; run `python -m experiments.sweep {SWEEP}`")
        return None
    rows = []
    for (setting, design, workers), cell in runs.groupby(["setting", "design", "workers"], sort=True):
        on = cell[cell["tensorboard"]].set_index("seed")[LEARNING_RATE]
        off = cell[~cell["tensorboard"]].set_index("seed")[LEARNING_RATE]
        seeds = sorted(set(on.dropna().index) & set(off.dropna().index))
        if len(seeds) < 2:
            continue
        ratios = (on[seeds] / off[seeds]).to_numpy(float)
        spread = float(off[seeds].max() / off[seeds].min() - 1)
        median = float(np.median(ratios))
        rows.append({"setting": setting, "design": design, "workers": workers, "rounds": len(seeds),
                     "off (env steps/s, median)": float(off[seeds].median()), "ratio": median,
                     "low": float(ratios.min()), "high": float(ratios.max()), "spread": spread,
                     "within": abs(median - 1) <= spread})
    if not rows:
        note(f"tensorboard cost: runs of {SWEEP}, but no cell with both arms in two rounds yet")
        return None
    frame = pd.DataFrame(rows)
    made = FigureData(frame)
    shown = pd.DataFrame({
        "env step": frame["setting"], "design (workers)": [f"{d} ({w})" for d, w in zip(frame["design"], frame["workers"])],
        "rounds": frame["rounds"], "files off: env steps/s": frame["off (env steps/s, median)"].map("{:,.0f}".format),
        "on / off, median [range]": [f"{r:.3f} [{lo:.3f}, {hi:.3f}]" for r, lo, hi in
                                     zip(frame["ratio"], frame["low"], frame["high"])],
        "off runs' spread": frame["spread"].map("{:.1%}".format),
        "cost within the spread": frame["within"].map({True: "yes", False: "no"})})
    made.number("TensorboardCostCells", len(frame), "{:d}")
    made.number("TensorboardCostWithin", int(frame["within"].sum()), "{:d}")
    made.number("TensorboardCostMedian", float(np.median(frame["ratio"])), "{:.3f}")
    made.table("tensorboard_cost", shown, "What writing TensorBoard event files costs: each speed cell's runs with "
               "the files on against off, paired by round (one run of each arm of every cell per round, one at a "
               f"time, logging every 1,000 env steps, evaluation off), on the speed once learning starts; "
               f"{runs_read(runs)}")
    return made
