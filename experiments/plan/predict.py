"""The cost model's prediction for every cell of a sweep, written before the sweep runs.

    python -m experiments.plan with practitioner_shape --no-confirm --out results/seed_shape/plan
    python -m experiments.plan.predict seed_shape --costs results/seed_shape/plan/plan.json \
        --out paper/tables/seed_shape_predicted

A model is validated out of sample: the predictions are written (and committed) before the runs
that test them exist, and compared with them later without refitting (analysis/report/speed/shape.py
reads this file beside the runs). Each cell is predicted for the run it will be: env steps/s
over the whole run (`cost_model.over_a_run`: its first learning_starts env steps unlearned), at
its own utd, workers and weight sync period, on the cores of the machine the costs were measured
on. Writes `<out>.json` (the predictions, the costs' source and digest, the commit) and
`<out>.md` (the table).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys


def costs_digest(costs: dict) -> str:
    """A short hash of plan.json's `component_costs_us`: predictions name the measurements they came
    from, so two sets made from the same costs can be told from two made from different ones."""
    return hashlib.sha1(json.dumps(costs, sort_keys=True).encode()).hexdigest()[:12]


def predictions(sweep_name: str, costs: dict, cores: int, scale: str = "small", cells: str | None = None) -> list[dict]:
    """One row per cell of the sweep (seeds share their cell's prediction), or of the cells that
    `cells` picks (`--cells` as the sweep takes it): rows are one per (design, workers), so a sweep
    whose settings differ in their costs (scaling: CartPole and Breakout) is predicted one setting at
    a time, from that setting's own components (tests/test_plan.py::test_predict_picks_cells)."""
    from analysis.cost.model import medians, over_a_run, predict
    from architectures.registry import design
    from experiments.sweeps.grid import expand, pick_cells
    from experiments.sweeps.catalog import SWEEPS

    c = medians(costs)
    rows, seen = [], set()
    runs = expand(SWEEPS[sweep_name], scale, seeds=1)
    for run in pick_cells(runs, cells) if cells else runs:
        if run.experiment != "train":
            continue
        cfg = run.config()
        n = int(cfg["num_workers"]) if design(run.architecture).workers else 1
        key = (run.architecture, n)
        if key in seen:
            continue
        seen.add(key)
        kwargs = dict(utd=float(cfg["utd"]), cores=cores, weight_sync_period=int(cfg["weight_sync_period"]))
        steady = predict(run.architecture, n, c, **kwargs)
        whole = over_a_run(run.architecture, n, c, total_env_steps=int(cfg["total_env_steps"]),
                           learning_starts=int(cfg["learning_starts"]), **kwargs)
        rows.append({"design": run.architecture, "workers": n, "predicted_env_steps_per_sec": whole,
                     "predicted_steady_env_steps_per_sec": steady.env_steps_per_sec,
                     "bottleneck": steady.bottleneck, "oversubscribed": steady.oversubscribed,
                     "role_rates": steady.rates})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep")
    parser.add_argument("--costs", required=True, help="a plan.json (experiments.plan) holding component_costs_us")
    parser.add_argument("--out", required=True, help="path without extension: writes <out>.json and <out>.md")
    parser.add_argument("--scale", default="small")
    parser.add_argument("--cells", help="only these cells, as `experiments.sweep --cells` takes them "
                        "(minatar_breakout_cpu/pqn): one setting's costs predict that setting")
    args = parser.parse_args(argv)
    from experiments.tracking.host import commit

    with open(args.costs) as f:
        plan = json.load(f)
    rows = predictions(args.sweep, plan["component_costs_us"], int(plan["cores"]), args.scale, args.cells)
    digest = costs_digest(plan["component_costs_us"])
    record = {"sweep": args.sweep, "scale": args.scale, "cells": args.cells, "cores": plan["cores"], "costs_from": args.costs,
              "costs_digest": digest, "commit": commit(), "predictions": rows,
              "component_costs_us": plan["component_costs_us"]}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(f"{args.out}.json", "w") as f:
        json.dump(record, f, indent=1)
    picked = f"the cells `{args.cells}` of" if args.cells else "every cell of"
    lines = [f"Predicted env steps/s for {picked} `{args.sweep}` ({args.scale} scale), written before its runs "
             f"from the component costs in `{args.costs}` (digest {digest}; {plan['cores']} cores).", "",
             "| design | workers | predicted env steps/s (whole run) | steady state | bound by |",
             "|---|---|---|---|---|"]
    for r in rows:
        over = " (oversubscribed)" if r["oversubscribed"] else ""
        lines.append(f"| {r['design']} | {r['workers']} | {r['predicted_env_steps_per_sec']:,.0f} | "
                     f"{r['predicted_steady_env_steps_per_sec']:,.0f} | {r['bottleneck']}{over} |")
    with open(f"{args.out}.md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
