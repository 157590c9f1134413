"""Turn a folder of stored Sacred runs into a per-run table (CSV) and print it as Markdown.

    python -m analysis.io.baseline_table results/runs --out results/baselines/single_env_cartpole.csv

Reads run.json files only (never imports architectures/). Runs that are not COMPLETED are
listed on stderr by id and left out.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys

CONFIG_COLUMNS = ("utd", "layer_norm", "reset_period", "hogwild_lock", "env_step_cost_us")
"""Config keys that tell the runs of one sweep apart, copied into every row."""
COLUMNS = ("run_id", "architecture", "num_workers", *CONFIG_COLUMNS, "env_id", "seed", "total_env_steps", "final_holdout_return",
           "env_steps_per_sec", "realised_utd", "train_seconds", "cpu_model", "git_commit")


def load_completed_runs(folder: str) -> list[dict]:
    if not os.path.isdir(folder):
        raise SystemExit(f"error: no runs folder at {folder!r}")
    rows = []
    # Numeric ids from plain runs, `<sweep>-<hash>` ids from sweeps; `_sources`, `_logs` and
    # `_incomplete` are not runs.
    names = [d for d in os.listdir(folder) if not d.startswith(("_", ".")) and os.path.isdir(os.path.join(folder, d))]
    for run_id in sorted(names, key=lambda d: (not d.isdigit(), int(d) if d.isdigit() else 0, d)):
        path = os.path.join(folder, run_id, "run.json")
        try:
            with open(path) as f:
                run = json.load(f)
            with open(os.path.join(folder, run_id, "config.json")) as f:
                config = json.load(f)
        except (OSError, json.JSONDecodeError) as err:
            print(f"skipping run {run_id}: unreadable ({err})", file=sys.stderr)
            continue
        if run.get("status") != "COMPLETED":
            print(f"skipping run {run_id}: status {run.get('status')}", file=sys.stderr)
            continue
        result = run["result"]
        row = {"run_id": run_id, "architecture": result.get("design") or result.get("architecture"),
               "num_workers": config.get("num_workers", 1), **{k: config.get(k) for k in CONFIG_COLUMNS},
               "env_id": config["env_id"],
               "seed": config["seed"], "total_env_steps": result["env_steps"],
               "final_holdout_return": result["final_holdout_return"],
               "env_steps_per_sec": round(result["env_steps_per_sec"], 1),
               "realised_utd": result["realised_utd"], "train_seconds": round(result["train_seconds"], 2),
               "cpu_model": run["host"].get("cpu_model"), "git_commit": run["host"].get("git", {}).get("commit")}
        for point in result.get("holdout_curve", []):
            row[f"holdout@{point['env_steps']}"] = point["return_mean"]
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", help="a FileStorageObserver folder")
    parser.add_argument("--out", help="CSV file to write")
    args = parser.parse_args(argv)
    rows = sorted(load_completed_runs(args.runs), key=lambda r: r["seed"])
    if not rows:
        raise SystemExit(f"error: no COMPLETED runs in {args.runs!r}")
    columns = list(COLUMNS) + sorted({k for r in rows for k in r if k.startswith("holdout@")},
                                     key=lambda k: int(k.split("@")[1]))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, columns)
            writer.writeheader()
            writer.writerows(rows)
    shown = ["seed", "final_holdout_return", "env_steps_per_sec", "realised_utd"]
    print("| " + " | ".join(shown) + " |")
    print("|" + "---|" * len(shown))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in shown) + " |")


if __name__ == "__main__":
    main()
