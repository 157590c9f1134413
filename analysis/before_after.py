"""Did a change make a design slower? Two stores of the same cells, one per commit, side by side.

    python -m analysis.before_after --before results/benchmarks/speed_before_after \\
        --after results/reference/speed [--out docs/speed-before-after.md]
    python -m analysis.before_after --learning --before results/reference/scale_cartpole \\
        --after results/benchmarks/roles_check

Reads the stores `python -m experiments.benches.speed_before_after` fills. For each cell (the env
step's busy and waiting cost, the design, its workers) and each round (a seed, its two runs made back
to back): the after run's rate once learning starts over the before run's. A cell's verdict compares
the median of those ratios with the rounds' own spread, the before runs' rates' max over min: a
median below 1 by more than that spread is "slower"; above by more, "faster"; else "within the
rounds' spread". With `--learning`, the guardrail on learning instead: each after run's mean
holdout return against the range of the before store's runs of its cell (every seed there).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from analysis.io.load import LEARNING_RATE, load_runs
from analysis.report.framework import formatting
from analysis.report.framework.selection import holdout_auc


def cell_of(config: dict) -> tuple[str, float, float]:
    """(setting, busy us, waiting us) of a run's env step."""
    busy, wait = float(config.get("env_step_cost_us") or 0.0), float(config.get("env_step_wait_us") or 0.0)
    return ("waits" if wait else "busy" if busy else "free"), busy, wait


def _cells(runs: pd.DataFrame, **measures: pd.Series) -> pd.DataFrame:
    """One row per run: its cell (KEY), its seed and `measures`."""
    cells = runs["config"].map(cell_of)
    return pd.DataFrame({"setting": cells.map(lambda c: c[0]), "busy_us": cells.map(lambda c: c[1]),
                         "wait_us": cells.map(lambda c: c[2]), "design": runs["design"],
                         "workers": runs["num_workers"].astype(int), "total_env_steps": runs["total_env_steps"].astype(int),
                         "seed": runs["seed"].astype(int), **measures})


def rates(store: str) -> pd.DataFrame:
    """One row per completed run: cell, design, workers, seed and its rate once learning starts."""
    runs = load_runs([store]).runs
    return _cells(runs, rate=runs[LEARNING_RATE].astype(float))


def learning(store: str) -> pd.DataFrame:
    """One row per completed run: cell, design, workers, seed and its primary learning measure, the
    mean holdout return over its checkpoints (docs/learning-at-scale.md)."""
    loaded = load_runs([store])
    return _cells(loaded.runs, auc=holdout_auc(loaded.holdout, loaded.runs["run_id"]).astype(float))


KEY = ["setting", "busy_us", "wait_us", "design", "workers", "total_env_steps"]
"""A cell: its env step, design and workers, and its budget (a store may keep an earlier, shorter
version of the same cells, which must not pair with these)."""


def compare(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Each cell's paired ratios (after over before, by seed), their median and range, the before
    runs' spread (max over min) and the verdict."""
    both = before.merge(after, on=KEY + ["seed"], suffixes=("_before", "_after")).dropna(subset=["rate_before", "rate_after"])
    rows = []
    for key, group in both.groupby(KEY, sort=False):
        ratio = group["rate_after"] / group["rate_before"]
        spread = float(group["rate_before"].max() / group["rate_before"].min() - 1.0)
        median = float(np.median(ratio))
        word = "slower" if median < 1.0 - spread else "faster" if median > 1.0 + spread else "within the rounds' spread"
        rows.append({**dict(zip(KEY, key)), "rounds": len(group),
                     "before (median env steps/s)": float(group["rate_before"].median()),
                     "after (median env steps/s)": float(group["rate_after"].median()),
                     "after / before (median)": median, "ratio min": float(ratio.min()), "ratio max": float(ratio.max()),
                     "rounds' spread (before max/min - 1)": spread, "verdict": word})
    return pd.DataFrame(rows)


def inside_spread(reference: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Each cell of `after`: its runs' primary measure against the range of `reference`'s runs of the
    same cell (every seed it has). "inside the reference's range" when every after run is inside;
    else how many are outside, and on which side. A guardrail, not a test: a few runs inside a
    range of ten rule out only a change larger than that range."""
    rows = []
    for key, group in after.dropna(subset=["auc"]).groupby(KEY, sort=False):
        same = reference.merge(pd.DataFrame([dict(zip(KEY, key))]), on=KEY).dropna(subset=["auc"])
        if same.empty:
            continue
        low, high = float(same["auc"].min()), float(same["auc"].max())
        below, above = int((group["auc"] < low).sum()), int((group["auc"] > high).sum())
        word = ("inside the reference's range" if not below and not above else
                f"{below + above} of {len(group)} outside ({below} below, {above} above)")
        rows.append({**dict(zip(KEY, key)), "reference runs": len(same), "reference min": low,
                     "reference median": float(same["auc"].median()), "reference max": high,
                     "after runs (seeds)": ", ".join(f"{a:.1f} ({s})" for a, s in zip(group["auc"], group["seed"])),
                     "verdict": word})
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame) -> str:
    """The comparison as a Markdown table, rates rounded to env steps/s and ratios to 3 places."""
    shown = table.copy()
    for column in shown.columns:
        if shown[column].dtype.kind == "f":
            shown[column] = shown[column].map(lambda v: f"{v:,.0f}" if abs(v) >= 10 else f"{v:.3f}")
    return formatting.markdown(shown) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.before_after", description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the before commit's store")
    parser.add_argument("--after", required=True, help="the after commit's store")
    parser.add_argument("--out", help="also write the table here (Markdown)")
    parser.add_argument("--learning", action="store_true",
                        help="compare learning instead: each after run's mean holdout return against the range of "
                             "the before store's runs of the same cell (its every seed)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be read, then stop")
    args = parser.parse_args(argv)
    if args.dry_run:
        print(f"before_after: would compare {args.before} with {args.after} (dry run: nothing read)", file=sys.stderr)
        return 0
    if args.learning:
        table = inside_spread(learning(args.before), learning(args.after))
    else:
        table = compare(rates(args.before), rates(args.after))
    if table.empty:
        print("error: no cell has a run in both stores" + ("" if args.learning else " with the same seed"),
              file=sys.stderr)
        return 2
    text = markdown(table)
    print(text, end="")
    if args.out:
        from architectures.core.atomic import atomic_write

        atomic_write(args.out, text.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
