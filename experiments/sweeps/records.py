"""What a sweep run left in its store, and whether it counts: the sweep's one reading of a stored
run, after each run and when it starts again (experiments/sweep.py).

A run's exit code says nothing here: a run that diverged exits 3 and is done, a run whose
process exited 0 after a full disk cut its run.json at 4,096 bytes is not. The record decides:

- done: the run.json (or MongoDB document) parses, its status is COMPLETED and it holds a
  result (a dict); whatever the exit code.
- diverged: done, and the result says `"diverged": true` (a non-finite TD loss or Q value
  stopped the run; high_utd's soft |Q| check sets it too). Counted apart in the summary and
  never rerun: a diverged run is an outcome, not a fault.
- failed: something is stored but it does not count: no run.json in the run's folder, a
  run.json that is not JSON, a status other than COMPLETED (FAILED, INTERRUPTED, or RUNNING
  left by a killed run), or COMPLETED with no result. Named with its reason in the summary,
  moved aside (`<out>/_incomplete/`) and rerun when the sweep starts again.
- absent: nothing stored: not run yet.

tests/test_sweep.py::test_what_a_run_left_decides_whether_it_counts is the table of cases.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

DONE, DIVERGED, FAILED, ABSENT = "done", "diverged", "failed", "absent"


@dataclass(frozen=True)
class RunRecord:
    state: str
    status: str | None = None
    """Sacred's status as stored, where there is one."""
    result: dict = field(default_factory=dict)
    reason: str = ""
    """Why a failed run does not count (shown in the sweep's summary)."""

    @property
    def counts(self) -> bool:
        """Done or diverged: a restarted sweep skips it."""
        return self.state in (DONE, DIVERGED)

    def label(self) -> str:
        """The summary table's status column."""
        if self.state == DIVERGED:
            return "DIVERGED"
        if self.state == ABSENT:
            return "not run"
        if self.state == FAILED and self.status == "COMPLETED":
            return "NO RESULT"
        if self.state == FAILED and self.status is None:  # no document, or one that does not parse
            return "UNREADABLE" if self.reason.startswith("run.json") else "INCOMPLETE"
        return str(self.status)


def classify(doc) -> RunRecord:
    """A stored run's document (run.json parsed, or MongoDB's) as a record."""
    if not isinstance(doc, dict):
        return RunRecord(FAILED, reason="run.json holds no run document")
    status, result = doc.get("status"), doc.get("result")
    if status != "COMPLETED":
        return RunRecord(FAILED, status, reason=f"status {status}")
    if not isinstance(result, dict):
        return RunRecord(FAILED, status, reason="COMPLETED but has no result")
    return RunRecord(DIVERGED if result.get("diverged") is True else DONE, status, result)


def read_run_folder(folder: str) -> RunRecord:
    """The record of the file-store run in `folder` (`<out>/<run id>/`)."""
    path = os.path.join(folder, "run.json")
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return RunRecord(FAILED, reason="no run.json") if os.path.exists(folder) else RunRecord(ABSENT)
    except OSError as err:
        return RunRecord(FAILED, reason=f"run.json unreadable ({err.strerror or err})")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        return RunRecord(FAILED, reason=f"run.json is not valid JSON ({len(text):,} bytes; {err})")
    return classify(doc)


def after_run(run_id: str, record: RunRecord, code: int) -> str | None:
    """The line the sweep prints for a run that just ended, where there is something to say: why
    it failed, that it diverged, or that it exited non-zero yet stored a COMPLETED result."""
    if not record.counts:
        return f"run {run_id} failed (exit {code}; {record.reason or 'nothing stored'})"
    if record.state == DIVERGED:
        reason = record.result.get("diverged_reason") or "diverged"
        return f"run {run_id} diverged ({reason}; exit {code}): counted apart, not rerun"
    if code != 0:
        return f"run {run_id} exited {code} but stored a COMPLETED result: counted as done"
    return None


def tally(ran: list[str], records: dict[str, RunRecord], minutes: float) -> tuple[str, list[str]]:
    """The sweep's closing line for the runs it ran (how many completed, which of them diverged),
    and its failed runs, each as `<run id> (<reason>)`."""
    done = [r for r in ran if records[r].counts]
    diverged = [r for r in ran if records[r].state == DIVERGED]
    line = f"{len(done)} of {len(ran)} runs completed in {minutes:.1f} min"
    if diverged:
        line += f"; {len(diverged)} of them diverged (counted apart, not rerun): {', '.join(diverged)}"
    return line, [f"{r} ({records[r].reason or 'nothing stored'})" for r in ran if not records[r].counts]
