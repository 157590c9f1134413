"""The suite's CPU learner against a practitioner's (the `plain_learner` sweep's update-timing runs):
one gradient step with the hand-derived MLP gradient and the fused Adam (what every DQN design here runs
on the CPU; pqn's LayerNorm network goes through autograd and RAdam), with autograd and the fused Adam, and with autograd and torch.optim.Adam's defaults, and
the ceiling each puts on a run: a learner that only updates, at utd 0.25, serves 1 / (0.25 x update)
env steps/s (its sampling and hand-off come on top, so a real run's ceiling is lower)."""

from __future__ import annotations

import pandas as pd

from analysis.io.load import RunSet
from analysis.report.framework.common import TIMING_EXPERIMENT, FigureData, Note, macro_name, sweep_runs

SWEEP = "plain_learner"
UTD = 0.25
"""The practitioner's ratio, one update per 4 env steps, and the suite's default."""
LEARNERS = {(True, "fused"): "hand-derived gradient, fused Adam (the suite's)",
            (True, "torch"): "hand-derived gradient, torch.optim.Adam",
            (False, "fused"): "autograd, fused Adam", (False, "torch"): "autograd, torch.optim.Adam"}
"""(mlp_fast_grad, optimizer) -> the learner's name; a conv net is autograd whatever mlp_fast_grad says."""


def _learner(network: str, config: dict) -> str:
    optimizer = config.get("optimizer", "fused")
    if network == "minatar_conv":
        return "autograd, fused Adam (the suite's)" if optimizer == "fused" else "autograd, torch.optim.Adam"
    return LEARNERS[bool(config.get("mlp_fast_grad", True)), optimizer]


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = sweep_runs(rs.runs, SWEEP)
    runs = runs[runs["experiment"] == TIMING_EXPERIMENT]
    if runs.empty:
        note(f"plain learner: no runs of `{SWEEP}`; run `python -m experiments.sweep {SWEEP} --out "
             f"results/reference/{SWEEP}` on an idle machine")
        return None
    runs = runs.assign(learner=[_learner(n, c) for n, c in zip(runs["network"], runs["config"])])
    made = FigureData(runs[["run_id", "network", "batch_size", "learner", "update_us_median"]])
    rows = []
    for (network, batch), cell in runs.groupby(["network", "batch_size"], sort=True):
        medians = cell.groupby("learner")["update_us_median"]
        ours = [k for k in medians.groups if k.endswith("(the suite's)")]
        if not ours:
            note(f"plain learner: {network} at batch {int(batch)} has no run of the suite's own learner to set the "
                 "others against; left out")
            continue
        suite = float(medians.median().loc[ours[0]])
        for learner, us in medians:
            median = float(us.median())
            rows.append({"network, batch": f"{network}, {int(batch)}", "learner": learner, "runs": len(us),
                         "one update, median [min, max] over runs": f"{median:,.0f} us [{us.min():,.0f}, {us.max():,.0f}]",
                         "x the suite's": f"{median / suite:.2f}",
                         f"ceiling at utd {UTD}: env steps/s": f"{1e6 / (UTD * median):,.0f}"})
            key = learner.split(" (")[0].replace("-", " ").replace(",", "").replace(".", " ")
            made.number(macro_name("plain", network, int(batch), key, "us"), median, "{:,.0f}")
            made.number(macro_name("plain", network, int(batch), key, "ratio"), median / suite, "{:.2f}")
            made.number(macro_name("plain", network, int(batch), key, "ceiling"), 1e6 / (UTD * median), "{:,.0f}")
    if not rows:
        return None
    made.number("PlainLearnerRuns", int(runs.groupby(["network", "batch_size", "learner"]).size().min()), "{:d}")
    made.table("plain_learner", pd.DataFrame(rows),
               f"The suite's CPU learner against a practitioner's (the `{SWEEP}` sweep: one torch thread, one run at a "
               "time, seed by seed, each run's median over its timed updates): the CartPole MLP with the hand-derived "
               "gradient and the fused Adam every DQN design here runs, with autograd and the fused Adam, and with autograd "
               "and torch.optim.Adam's defaults; the MinAtar conv net, autograd either way, with each Adam. The ceiling: "
               f"the env steps/s a learner that only updates serves at utd {UTD}, 1 / ({UTD} x update); its sampling "
               "and the actors' hand-off come on top")
    return made
