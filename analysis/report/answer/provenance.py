"""Where every stored run came from: per sweep, its runs, the commits they ran at, and how many ran
from a tree with uncommitted changes (their record says `dirty`; runs since 8e69dde also store the
diff beside it, `source.diff`). A reader can tell which numbers a clean checkout reproduces."""

from __future__ import annotations

import pandas as pd

from analysis.io.load import RunSet
from analysis.report.framework.common import FigureData, Note


def data(rs: RunSet, note: Note) -> FigureData | None:
    runs = rs.runs
    if runs.empty:
        note("provenance: no runs")
        return None
    rows = []
    for sweep, part in runs.groupby(runs["sweep"].fillna("").astype(str), sort=True):
        dirty = part["git_dirty"]
        commits = sorted({str(c)[:7] for c in part["git_commit"].dropna()})
        rows.append({"sweep": sweep or "(no sweep)", "runs": len(part), "commits": len(commits),
                     "from a dirty tree": int((dirty == True).sum()),  # noqa: E712 - None is unknown
                     "not recorded": int(dirty.isna().sum()),
                     "at": ", ".join(commits[:4]) + (f" (+{len(commits) - 4})" if len(commits) > 4 else "")})
    made = FigureData(pd.DataFrame(rows))
    frame = made.data
    made.number("ProvenanceDirtyRuns", int(frame["from a dirty tree"].sum()), "{:d}")
    made.number("ProvenanceRuns", int(frame["runs"].sum()), "{:d}")
    made.table("provenance", frame, "Every stored run by sweep: the commits it ran at (the first four), how many ran "
               "from a tree with uncommitted changes (a run since 8e69dde stores that diff as source.diff beside its "
               "record), and how many records do not say (made before the suite recorded it)")
    return made
