"""Is actor_learner Ape-X? Ape-X's fixed per-actor epsilons (eps_i = 0.4 ** (1 + 7 i / (N - 1)),
`actor_epsilons=apex`) against the one decaying schedule every actor shares (the suite's default),
at 8 actors on CartPole (the `apex_epsilons` sweep, learning only): the final and mean holdout
return, P(apex > schedule) with its interval and the exact rank test, Holm over the two measures."""

from __future__ import annotations

import pandas as pd

from analysis import stats
from analysis.io.load import RunSet
from analysis.report.framework.claims import SOLVED_AT, compare_measures, verdict
from analysis.report.framework.common import FigureData, Note, ci, sweep_runs, holdout_auc, macro_name

def _p(value: float) -> str:
    """An exact p as printed: below the fourth decimal it reads "< 0.0001", never "0.0000"."""
    return "< 0.0001" if value < 1e-4 else f"{value:.4f}"


MEASURES = {"final_holdout_return": "final holdout return", "holdout_auc": "mean holdout over checkpoints"}


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = sweep_runs(rs.runs, "apex_epsilons").copy()
    if runs.empty:
        note("apex: no runs of the `apex_epsilons` sweep; run `python -m experiments.sweep apex_epsilons --jobs 2 --nice`")
        return None
    runs["holdout_auc"] = holdout_auc(rs.holdout, runs["run_id"])
    runs["epsilons"] = runs["actor_epsilons"]
    frame = runs[["run_id", "epsilons", "num_workers", "seed", "final_holdout_return", "holdout_auc"]].sort_values(
        ["epsilons", "seed"], ignore_index=True)
    made = FigureData(frame)
    apex, shared = frame[frame["epsilons"] == "apex"], frame[frame["epsilons"] == "schedule"]
    if apex.empty or shared.empty:
        note("apex: the sweep needs both actor_epsilons=apex and =schedule runs")
        return None
    compared = compare_measures(apex, shared, MEASURES)
    solved = SOLVED_AT["CartPole"]
    rows = []
    for column, label in MEASURES.items():
        vs = compared[column]
        word = verdict(vs.probability, vs.holm)
        rows.append({"measure": label, "apex IQM [95%]": ci(*stats.interval(apex[column]), fmt="{:.0f}"),
                     "shared schedule IQM [95%]": ci(*stats.interval(shared[column]), fmt="{:.0f}"),
                     "P(apex > schedule) [95%]": ci(vs.probability, vs.low, vs.high, fmt="{:.2f}"),
                     "rank p": _p(vs.p), "Holm p": _p(vs.holm), "verdict": word})
        slug = "final" if column == "final_holdout_return" else "auc"
        for suffix, value, fmt in (("poi", vs.probability, "{:.2f}"), ("holm", _p(vs.holm), "{}"),
                                   ("verdict", word, "{}"), ("iqm", stats.interval(apex[column])[0], "{:.0f}"),
                                   ("schedule iqm", stats.interval(shared[column])[0], "{:.0f}")):
            made.number(macro_name("apex", slug, suffix), value, fmt)
    made.number("ApexSeeds", len(apex), "{:d}")
    made.number("ApexWorkers", int(apex["num_workers"].iloc[0]), "{:d}")
    made.number("ApexSolved", int((apex["final_holdout_return"] >= solved).sum()), "{:d}")
    made.number("ApexScheduleSolved", int((shared["final_holdout_return"] >= solved).sum()), "{:d}")
    made.table("apex_epsilons", pd.DataFrame(rows),
               f"Ape-X's fixed per-actor epsilons against one shared decaying schedule: actor_learner at "
               f"{int(apex['num_workers'].iloc[0])} actors on CartPole, 100k env steps, seeds "
               f"{int(frame['seed'].min())}-{int(frame['seed'].max())} ({len(apex)} runs each, the `apex_epsilons` "
               "sweep, learning only); IQM with 95% stratified-bootstrap intervals, P(apex > schedule) with its "
               "interval, the exact rank test and Holm's p over the two measures (this table's family).")
    return made
