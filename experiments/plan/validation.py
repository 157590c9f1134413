"""plan's pre-registered validation (docs/plan-validation.md): plan on each of the page's ten envs, then
every cell the page names predicted from those plans and written down before any run.

    python -m experiments.plan.validation predict                  # the 10 plans (resumes), then predictions.json
    python -m experiments.plan.validation predict --only Wait1ms BreakoutWait1ms
    python -m experiments.plan.validation predict --dry-run        # what would run, and about how long

Each plan is `python -m experiments.plan --out <out>/KEY --workers <the page's counts> with <config>
env_id=<env>`, one at a time, each in a fresh process after a rest (`--rest`, 30 s: a measurement
right after minutes of busy cores ran slow, docs/benchmarks.md; KEY is the env's name: `Wait1ms`,
`BreakoutWait1ms`); a plan whose plan.json exists is kept, so a stopped run resumes. `--workers` makes
plan predict the page's worker counts where its own counts stop short of them. Once all ten exist,
`<out>/predictions.json` holds, for each of the page's 114 cells, plan's prediction with its interval
and the run length (its learning_starts and 80 s at the predicted speed, rounded up to 1,000, at least 10,000 env steps), each
plan's costs digest, and the commit: the plan_validation sweep reads its cells from it
(experiments/sweeps/cells.py), and analysis.plan_validation compares its runs with it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from time import sleep

from experiments.plan.shapes import GAMES, SHAPES, mean_step_us
from experiments.sweeps.cells import PLAN_VALIDATION, ROOT

NAMED_CONFIGS = {"": "cartpole", "Breakout": "minatar_breakout_cpu"}
"""Each game's config (by its env-name prefix in shapes.GAMES): the MLP's and the conv net's."""
ON_BREAKOUT = ("Wait1ms", "MixedThird")
"""The shapes the page runs on Breakout too."""
PARALLEL = ("actor_learner", "hogwild", "vector_env", "pqn")
WORKERS, BUSY_WORKERS = (2, 8, 16), (2,)
"""The page's worker counts; past 2 a busy-only step time-shares this machine's 2 cores, so 2 only there."""
SECONDS, ROUND_TO, AT_LEAST = 80, 1_000, 10_000
"""A cell's run length: its learning_starts, then SECONDS of learning at its predicted speed, rounded up to
ROUND_TO, at least AT_LEAST env steps. 80 s, not the page's first 45: a kept speed run has at least 60 s of
learning, and a run 25% faster than predicted (the page's bound for a cell that holds: (predicted -
measured) / measured = -25%, measured = predicted / 0.75) still learns for 80 x 0.75 = 60 s (amended before
any prediction)."""
PLAN_COMMAND = (sys.executable, "-m", "experiments.plan")
"""What each plan runs, in a fresh process (tests put a stand-in here)."""
OUT = os.path.dirname(PLAN_VALIDATION)


def busy_only(shape: str) -> bool:
    """A shape whose step only computes (no wait, no slow reset): run at 2 workers only."""
    return set(SHAPES[shape]) == {"busy_us"}


@dataclass(frozen=True)
class Plan:
    """One of the page's ten plans: an env (a game in a shape), its config and the counts it must predict."""

    key: str
    game: str
    shape: str
    named_config: str
    env_id: str
    workers: tuple[int, ...]

    def cells(self) -> list[tuple[str, int]]:
        """(design, workers) of every cell the page runs on this env: single_env once, the rest at `workers`."""
        return [("single_env", 1)] + [(design, n) for design in PARALLEL for n in self.workers]

    def command(self, out: str) -> list[str]:
        return [*PLAN_COMMAND, "--out", os.path.join(out, self.key), "--workers", *map(str, self.workers),
                "with", self.named_config, f"env_id={self.env_id}"]


PLANS = [Plan(f"{prefix}{shape}", GAMES[prefix][0].split("/")[-1].split("-")[0], shape, NAMED_CONFIGS[prefix],
              f"experiments.plan.shapes:{prefix}{shape}-v0", BUSY_WORKERS if busy_only(shape) else WORKERS)
         for prefix in GAMES for shape in SHAPES if not prefix or shape in ON_BREAKOUT]
"""The page's ten: CartPole in every shape, then Breakout in ON_BREAKOUT."""


def run_length(predicted: float, learning_starts: int = 0) -> int:
    """Env steps: `learning_starts`, then SECONDS at `predicted` env steps/s, rounded up to ROUND_TO, at least
    AT_LEAST (the steps before learning run at another speed, and are not counted as learning)."""
    return max(AT_LEAST, math.ceil((learning_starts + SECONDS * predicted) / ROUND_TO) * ROUND_TO)


class MissingPrediction(ValueError):
    """A plan.json lacks a cell the page needs, or is another env's: said, never filled in."""


def plan_cells(plan: Plan, record: dict, where: str) -> list[dict]:
    """Every cell of `plan` as its plan.json (`record`, read from `where`) predicts it, with its run length."""
    if record.get("config", {}).get("env_id") != plan.env_id:
        raise MissingPrediction(f"{plan.key}: {where} is a plan for {record.get('config', {}).get('env_id')!r}, not "
                                f"{plan.env_id!r}; remove its folder and run this command again")
    points = {(p["design"], int(p["workers"])): p for p in record["predictions"]}
    out = []
    for design, workers in plan.cells():
        point = points.get((design, workers))
        if point is None or "interval" not in point:
            counts = ", ".join(str(n) for d, n in sorted(points) if d == design) or "none"
            said = "no interval" if point else f"no prediction (it predicted {design} at: {counts})"
            raise MissingPrediction(f"{plan.key}: {where} has {said} for {design} at {workers} worker(s); remove "
                                    f"its folder and run this command again (it plans with --workers "
                                    f"{' '.join(map(str, plan.workers))})")
        predicted = float(point["predicted_env_steps_per_sec"])
        out.append({"key": plan.key, "game": plan.game, "shape": plan.shape, "named_config": plan.named_config,
                    "env_id": plan.env_id, "design": design, "workers": workers,
                    "predicted_env_steps_per_sec": predicted, "interval": [float(v) for v in point["interval"]],
                    "bottleneck": point.get("bottleneck"), "oversubscribed": point.get("oversubscribed"),
                    "total_env_steps": run_length(predicted, int(record["config"].get("learning_starts", 0)))})
    return out


def predictions(records: dict[str, tuple[dict, str]], commit: str | None, dirty: bool | None) -> dict:
    """predictions.json from every plan's plan.json (`records`: key -> (its content, its path)): each
    plan's costs digest (as experiments/plan/predict.py hashes them) and every cell, in PLANS' order."""
    from experiments.plan.predict import costs_digest

    plans, cells = {}, []
    for plan in PLANS:
        record, where = records[plan.key]
        cells += plan_cells(plan, record, where)
        plans[plan.key] = {"env_id": plan.env_id, "named_config": plan.named_config, "plan": where,
                           "costs_digest": costs_digest(record["component_costs_us"]), "cores": record.get("cores"),
                           "cpu": (record.get("host") or {}).get("cpu"), "window": record.get("window"),
                           "workers_asked": record.get("workers_asked"), "seconds": record.get("seconds")}
    return {"page": "docs/plan-validation.md", "commit": commit, "tree_dirty": dirty,
            "run_length": {"seconds": SECONDS, "round_up_to": ROUND_TO, "at_least": AT_LEAST},
            "plans": plans, "cells": cells}


def shown(path: str) -> str:
    """A path as predictions.json and the messages name it: from the checkout where it lies inside it."""
    inside = os.path.abspath(path).startswith(ROOT + os.sep)
    return os.path.relpath(os.path.abspath(path), ROOT) if inside else path


def run_plan(plan: Plan, out: str) -> int:
    """One plan in a fresh process, its output passed on to stderr as it comes and kept beside its
    plan.json (plan.log) once it succeeds; returns its exit code."""
    from architectures.core.atomic import atomic_write
    from architectures.core.lifetime import die_with_parent

    proc = subprocess.Popen(plan.command(out), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=die_with_parent)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        print(f"  | {line}", end="", file=sys.stderr, flush=True)
    code = proc.wait()
    if code == 0:
        atomic_write(os.path.join(out, plan.key, "plan.log"), "".join(lines).encode())
    return code


def make_plans(out: str, only: list[str], dry_run: bool, rest_s: float) -> bool:
    """Every plan `only` names (all by default) that has no plan.json yet, one at a time, each after
    `rest_s` idle seconds; False where one failed (the plans before it are kept)."""
    from experiments.plan.measure import estimate_seconds

    for k, plan in enumerate(PLANS, 1):
        if only and plan.key not in only:
            continue
        path = os.path.join(out, plan.key, "plan.json")
        if os.path.exists(path):
            print(f"[{k}/{len(PLANS)}] {plan.key}: {shown(path)} exists, kept", file=sys.stderr)
            continue
        minutes = estimate_seconds(mean_step_us(plan.shape) / 1e6, 40.0, 15.0) / 60
        print(f"[{k}/{len(PLANS)}] {plan.key}: python {' '.join(plan.command(shown(out))[1:])} (about {minutes:.0f} "
              "min by its step's mean)" + (" (dry run: not started)" if dry_run else ""), file=sys.stderr, flush=True)
        if dry_run:
            continue
        sleep(rest_s)  # a measurement right after minutes of busy cores ran slow (docs/benchmarks.md)
        if (code := run_plan(plan, out)) != 0:
            print(f"error: {plan.key}'s plan failed (exit {code}); the plans before it are kept: run the same command "
                  "again to resume", file=sys.stderr)
            return False
    return True


def write_predictions(out: str) -> int:
    """predictions.json from the ten plan.json files, written whole or not at all; exit status 1 where
    one cannot be read or lacks a cell (named), nothing written then."""
    from architectures.core.atomic import atomic_write
    from experiments.tracking import host

    target, records = os.path.join(out, "predictions.json"), {}
    try:
        for plan in PLANS:
            path = os.path.join(out, plan.key, "plan.json")
            with open(path) as f:
                records[plan.key] = (json.load(f), shown(path))
            if (records[plan.key][0].get("window") or {}).get("disturbed"):
                print(f"warning: {plan.key}'s plan was measured beside other work (plan.json window.disturbed); "
                      "the page asks for an idle machine", file=sys.stderr)
        tree = host.git()
        made = predictions(records, tree["commit"], tree["dirty"])
    except (OSError, ValueError, KeyError) as err:  # MissingPrediction among them
        print(f"error: {err}; {shown(target)} not written", file=sys.stderr)
        return 1
    atomic_write(target, (json.dumps(made, indent=1) + "\n").encode())
    seconds = sum(c["total_env_steps"] / c["predicted_env_steps_per_sec"] for c in made["cells"])
    print(f"wrote {shown(target)}: {len(made['cells'])} cells from {len(PLANS)} plans at commit "
          f"{str(made['commit'])[:12]}{' (a dirty tree)' if made['tree_dirty'] else ''}; each seed's round of runs "
          f"is about {seconds / 60:.0f} min of training at the predicted speeds", file=sys.stderr)
    return 0


def predict(out: str, only: list[str], dry_run: bool, rest_s: float = 0.0) -> int:
    """The plans (make_plans), then, once all ten exist, predictions.json (write_predictions)."""
    if not make_plans(out, only, dry_run, rest_s):
        return 1
    missing = [p.key for p in PLANS if not os.path.exists(os.path.join(out, p.key, "plan.json"))]
    target = shown(os.path.join(out, "predictions.json"))
    if dry_run or missing:
        still = f"plans still to make: {', '.join(missing)}" if missing else "every plan exists"
        print(f"would write {target} ({still}; dry run)" if dry_run else f"{target} not written: {still}",
              file=sys.stderr)
        return 0
    return write_predictions(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.plan.validation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    predict_parser = commands.add_parser("predict", help="plan on each env, then write predictions.json")
    predict_parser.add_argument("--out", default=os.path.join(ROOT, OUT), help=f"default: {OUT}")
    predict_parser.add_argument("--only", nargs="+", default=[], metavar="KEY",
                                help=f"only these plans (of: {', '.join(p.key for p in PLANS)})")
    predict_parser.add_argument("--rest", type=float, default=30.0, metavar="S",
                                help="seconds the machine rests before each plan (default 30: a run's speed carried "
                                     "over from the one before it, docs/benchmarks.md)")
    predict_parser.add_argument("--dry-run", action="store_true", help="say what would run and write; run nothing")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only) - {p.key for p in PLANS})
    if unknown:
        predict_parser.error(f"--only: unknown {', '.join(unknown)} (valid: {', '.join(p.key for p in PLANS)})")
    try:
        return predict(os.path.abspath(args.out), args.only, args.dry_run, args.rest)
    except KeyboardInterrupt:  # the plan under way got it too, and leaves no plan.json
        print("error: interrupted (Ctrl-C); the plans made are kept: run the same command again to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
