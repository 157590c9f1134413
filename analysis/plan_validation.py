"""plan on envs it was not built on, read against its predictions (docs/plan-validation.md fixes how).

    python -m analysis.plan_validation --predictions results/reference/plan_validation/predictions.json \\
        --runs results/reference/plan_validation_runs [--out docs/plan-validation-results.md]

Per pre-registered cell (shape, network, design, workers): plan's predicted env steps/s with its
interval, the measured rate (the median over the cell's seeds of each run's env steps/s once learning
starts: analysis/io/load.py's learning_rate), the signed error (predicted - measured) / measured, and
whether the measured rate is inside the interval. Then the page's rule: at least 90% of cells within
25%, the median signed error within +-10%, the measured rate inside the interval in at least 80% of
cells, and every cell outside 25% explained by its mechanism: a column left for a person to fill, never
guessed here. Only runs that cite these predictions (their result's `cell_meta`), ran alone and ran the
cell's budget count; the others are named and left out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

import numpy as np
import pandas as pd

from analysis.io.load import LEARNING_RATE, load_runs
from analysis.io.stores import NoRunsError
from analysis.report.framework import formatting

WITHIN, SHARE_WITHIN, MEDIAN_WITHIN, SHARE_INSIDE = 0.25, 0.90, 0.10, 0.80
"""The page's rule: SHARE_WITHIN of cells within WITHIN, the median signed error within +-MEDIAN_WITHIN,
the measured rate inside the interval in SHARE_INSIDE of cells."""
SEEDS = 3
"""Seeds a cell needs before the rule is read as final (the page's 101-103)."""
NETWORKS = {"CartPole": "MLP", "Breakout": "conv"}
"""Each game's network, as the page names them."""
CELL = ["key", "design", "workers"]
"""A cell: its plan (game and shape), design and workers."""


def read_predictions(path: str) -> tuple[dict, pd.DataFrame]:
    """predictions.json and its cells as a frame; with `digest`, the file's as the sweep's runs cite it
    (experiments/sweeps/cells.py hashes the same bytes)."""
    with open(path, "rb") as f:
        text = f.read()
    made = json.loads(text)
    made["digest"] = hashlib.sha1(text).hexdigest()[:12]
    return made, pd.DataFrame(made["cells"])


def counted_runs(runs: pd.DataFrame, made: dict, cells: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The runs that measure a cell of `made`, one row each (cell, seed, rate), and a line for each
    kind of run left out: citing other predictions (or none), run beside others, another budget, or
    no rate once learning."""
    notes = []
    cite = runs["result"].map(lambda r: (r or {}).get("cell_meta") or {})
    ours = cite.map(lambda c: c.get("plan_predictions_commit") == made["commit"]
                    and c.get("plan_predictions_digest") == made["digest"])
    runs = runs.assign(workers=runs["num_workers"].astype(int))
    matched = runs.merge(cells[["env_id", "design", "workers", "key", "total_env_steps"]].rename(
        columns={"total_env_steps": "budget"}), on=["env_id", "design", "workers"], how="left")
    checks = [("cite other predictions or none", ~ours.to_numpy()),
              ("are of no cell of these predictions", matched["key"].isna().to_numpy()),
              ("ran beside other runs (runs_at_once > 1)", (matched["runs_at_once"].fillna(1) != 1).to_numpy()),
              ("ran another budget than their cell's", (matched["total_env_steps"] != matched["budget"]).to_numpy()),
              ("have no rate once learning", matched[LEARNING_RATE].isna().to_numpy())]
    keep = np.ones(len(matched), dtype=bool)
    for why, out in checks:
        left = keep & out
        if left.any():
            notes.append(f"{left.sum()} run(s) {why}; left out: {', '.join(sorted(matched.loc[left, 'run_id']))}")
        keep &= ~out
    kept = matched[keep]
    return pd.DataFrame({**{c: kept[c] for c in CELL}, "seed": kept["seed"].astype(int),
                         "rate": kept[LEARNING_RATE].astype(float)}), notes


def cell_table(cells: pd.DataFrame, counted: pd.DataFrame) -> pd.DataFrame:
    """One row per predicted cell, in the predictions' order: predicted, interval, measured (median of
    its seeds), seeds, signed error and whether the measured rate is inside the interval (NaN, None
    where it has no run)."""
    by_cell = counted.groupby(CELL)["rate"].agg(["median", "count"])
    rows = []
    for cell in cells.itertuples(index=False):
        measured, seeds = (by_cell.loc[(cell.key, cell.design, cell.workers)]
                           if (cell.key, cell.design, cell.workers) in by_cell.index else (np.nan, 0))
        low, high = cell.interval
        error = (cell.predicted_env_steps_per_sec - measured) / measured if seeds else np.nan
        rows.append({"shape": cell.shape, "network": f"{cell.game} ({NETWORKS.get(cell.game, '?')})",
                     "design": cell.design, "workers": int(cell.workers), "predicted": cell.predicted_env_steps_per_sec,
                     "low": float(low), "high": float(high), "measured": float(measured), "seeds": int(seeds),
                     "error": float(error), "inside": bool(low <= measured <= high) if seeds else None})
    return pd.DataFrame(rows)


def rule(table: pd.DataFrame) -> dict:
    """The page's rule over the measured cells: each clause's value and whether it holds, the cells
    outside WITHIN, and whether every cell has SEEDS seeds (else the verdict waits)."""
    measured = table[table["seeds"] > 0]
    within = measured["error"].abs() <= WITHIN
    median = float(measured["error"].median()) if len(measured) else np.nan
    complete = bool(len(table) and (table["seeds"] >= SEEDS).all())
    clauses = {"within": (within.mean() if len(measured) else np.nan, within.mean() >= SHARE_WITHIN),
               "median": (median, abs(median) <= MEDIAN_WITHIN),
               "inside": (measured["inside"].astype(bool).mean() if len(measured) else np.nan,
                          measured["inside"].astype(bool).mean() >= SHARE_INSIDE)}
    return {"cells": len(table), "measured": len(measured), "complete": complete, "clauses": clauses,
            "misses": measured[~within], "holds": complete and all(ok for _, ok in clauses.values())}


def _rate(value: float) -> str:
    return f"{value:,.0f}" if np.isfinite(value) else "-"


def _share(value: float, form: str = ".0%") -> str:
    return format(value, form) if np.isfinite(value) else "-"


def markdown(table: pd.DataFrame, verdict: dict, made: dict, predictions: str, runs: str, notes: list[str]) -> str:
    """The page's table, the rule clause by clause, and the cells outside WITHIN with an empty mechanism column."""
    (within, within_ok), (median, median_ok), (inside, inside_ok) = verdict["clauses"].values()
    n, misses = verdict["measured"], verdict["misses"]
    word = ("holds" if verdict["holds"] else "does not hold") if verdict["complete"] else \
        f"is not read yet: {sum(table['seeds'] >= SEEDS)} of {verdict['cells']} cells have their {SEEDS} seeds"
    shown = table.assign(
        predicted=table["predicted"].map(_rate), interval=[f"[{_rate(lo)}, {_rate(hi)}]" for lo, hi in
                                                           zip(table["low"], table["high"])],
        measured=[f"{_rate(m)} ({s})" for m, s in zip(table["measured"], table["seeds"])],
        error=table["error"].map(lambda e: f"{e:+.1%}" if np.isfinite(e) else "-"),
        inside=table["inside"].map(lambda i: "-" if i is None else "yes" if i else "no"))
    columns = ["shape", "network", "design", "workers", "predicted", "interval", "measured", "error", "inside"]
    lines = [f"Predictions: `{predictions}` (commit {str(made['commit'])[:12]}, digest {made['digest']}), written "
             f"before the runs; runs: `{runs}`. Measured: the median over a cell's seeds (their number in brackets) "
             "of env steps/s once learning starts. Error: (predicted - measured) / measured.", "",
             "| clause (docs/plan-validation.md) | needs | here | holds |", "|---|---|---|---|",
             f"| cells within {WITHIN:.0%} | at least {SHARE_WITHIN:.0%} | {_share(within)} of {n} | "
             f"{'yes' if within_ok else 'no'} |",
             f"| median signed error | within +-{MEDIAN_WITHIN:.0%} | {_share(median, '+.1%')} | "
             f"{'yes' if median_ok else 'no'} |",
             f"| measured inside the interval | at least {SHARE_INSIDE:.0%} of cells | {_share(inside)} of {n} | "
             f"{'yes' if inside_ok else 'no'} |",
             f"| every cell outside {WITHIN:.0%} explained by its mechanism | all {len(misses)} | by hand, below | - |",
             "", f"The rule {word}" + (f" (the mechanisms of the {len(misses)} cells outside {WITHIN:.0%} still "
                                       "to be written)." if len(misses) else "."), "",
             formatting.markdown(shown[columns]), ""]
    if len(misses):
        lines += [f"Cells outside {WITHIN:.0%}, each with its mechanism (written by hand, from the runs):", "",
                  formatting.markdown(shown.loc[misses.index, ["shape", "network", "design", "workers", "predicted",
                                                               "measured", "error"]].assign(mechanism="")), ""]
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.plan_validation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--predictions", required=True, help="predictions.json (python -m experiments.plan.validation)")
    parser.add_argument("--runs", required=True, help="the plan_validation sweep's store")
    parser.add_argument("--out", help="also write the table here (Markdown)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be read, then stop")
    args = parser.parse_args(argv)
    if args.dry_run:
        print(f"plan_validation: would compare {args.runs} with {args.predictions} (dry run: nothing read)",
              file=sys.stderr)
        return 0
    try:
        made, cells = read_predictions(args.predictions)
    except (OSError, ValueError, KeyError) as err:
        print(f"error: --predictions {args.predictions}: {err} (python -m experiments.plan.validation predict "
              "writes it)", file=sys.stderr)
        return 2
    try:
        counted, notes = counted_runs(load_runs([args.runs]).runs, made, cells)
    except NoRunsError:  # before the runs: every cell with its prediction, none measured
        counted, notes = pd.DataFrame(columns=[*CELL, "seed", "rate"]), [f"no runs in {args.runs} yet"]
    table = cell_table(cells, counted)
    text = markdown(table, rule(table), made, args.predictions, args.runs, notes)
    print(text, end="")
    if args.out:
        from architectures.core.atomic import atomic_write

        atomic_write(args.out, text.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
