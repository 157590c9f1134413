"""What a sweep will do, settled before any run starts: its store (checked), the Ray runner, the
runs this machine can make, checked, and what each stored so far; and the lines announcing it.
A bad input stops here with one line (usage_error, exit 2), as argparse's own errors do."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import NoReturn

from experiments.sweeps.records import DIVERGED, RunRecord
from experiments.sweeps.grid import Overrides, RunSpec, check_runs, expand, pick_cells
from experiments.sweeps.runners import ROOT, RayRunner
from experiments.sweeps.stores import FileStore, MongoStore
from experiments.sweeps.catalog import SWEEPS, Sweep


def usage_error(text: str) -> NoReturn:
    """`error: TEXT` on stderr and exit 2, as argparse's own errors."""
    sys.stderr.write(f"error: {text}\n")
    sys.exit(2)


@dataclass
class Plan:
    """What a sweep will do: its store, the runs that can run here and which of them are to run."""

    sweep: Sweep
    out: str
    where: str
    """The store as the messages name it: the --mongo URL, else --out."""
    store: FileStore
    ray: RayRunner | None
    landed: list[RunSpec]
    """The runs whose design (and device) this machine has, in the sweep's order."""
    skipped: list[str]
    """The designs of the sweep not landed yet."""
    records: dict[str, RunRecord]
    todo: list[RunSpec]
    minutes: float
    """The sweep's estimate for the landed runs, all of them."""


def plan_runs(args: argparse.Namespace, overrides: Overrides) -> Plan:
    """The store (checked: an unwritable --out or unreachable --mongo stops us before any run), the
    Ray runner, the sweep's runs checked, and what each run stored so far."""
    sweep = SWEEPS[args.name]
    if sweep.not_ready:  # nothing to list or run until the file its cells come from is written
        if args.dry_run:
            print(f"sweep {sweep.name}: no runs to list: {sweep.not_ready}", file=sys.stderr)
            sys.exit(0)
        usage_error(f"sweep {sweep.name}: {sweep.not_ready}")
    default_out = sweep.name + (f"-with-{overrides.digest()}" if overrides.text() else "")
    out = args.out or os.path.join(ROOT, "results", "sweeps", default_out)
    if not args.dry_run:
        check_tree(out, getattr(args, "allow_dirty", False), sweep.cells_from)
    store = MongoStore(args.mongo, out) if args.mongo else FileStore(out)
    store.check()
    ray_runner = RayRunner(args.ray) if args.ray else None  # no Ray or an unreachable address: stop here too
    runs = expand(sweep, args.scale, args.seeds, overrides)
    # The sweep's estimate is for all of it at its own seeds: --seeds and --cells take their share.
    whole = len(runs) if args.seeds is None else len(expand(sweep, args.scale, None, overrides))
    if args.cells is not None:
        try:
            runs = pick_cells(runs, args.cells)
        except ValueError as err:
            usage_error(str(err))
    from architectures.core.config import ConfigError

    try:
        check_runs(runs, overrides)
    except ConfigError as err:
        usage_error(str(err))
    landed, skipped = runnable_here(runs)
    records = {r.run_id: store.record(r.run_id) for r in landed}
    return Plan(sweep, out, args.mongo or out, store, ray_runner, landed, skipped, records,
                todo=[r for r in landed if not records[r.run_id].counts],
                minutes=sweep.minutes[args.scale] * len(landed) / max(1, whole))


REFERENCE = os.path.join(ROOT, "results", "reference")
"""The committed stores the writeup reads: their runs come from a clean commit, or carry their diff."""


def check_tree(out: str, allow_dirty: bool, cells_from: str = "") -> None:
    """A sweep into results/reference/ from a tree that differs from its commit stops here, in one
    line naming the changed files, unless `--allow-dirty` (then each run stores its diff); so does
    one whose cells come from a file (`cells_from`) that is not committed as it is."""
    from experiments.tracking import host

    if os.path.commonpath([os.path.abspath(out), REFERENCE]) != REFERENCE or allow_dirty:
        return
    if cells_from and host.uncommitted(cells_from):
        usage_error(f"--out {out}: this sweep's cells come from {cells_from}, which differs from the commit "
                    "(or is not in it): commit it before the runs, which cite it; or pass --allow-dirty")
    tree = host.git()  # what each run's record will say of the tree
    if tree["dirty"] is None:
        usage_error(f"--out {out}: a reference store takes runs from a known commit, and git could not tell "
                    "this tree's; pass --allow-dirty to run anyway")
    changed = tree["changed"]
    if changed:
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        usage_error(f"--out {out}: a reference store takes runs from a clean commit, and the tree has "
                    f"{len(changed)} uncommitted file(s) ({shown}); commit them, or pass --allow-dirty "
                    "to store each run's diff beside its record")


def runnable_here(runs: list[RunSpec]) -> tuple[list[RunSpec], list[str]]:
    """The runs whose design has landed (and, for a cuda run, where this machine has CUDA), and
    the designs not landed yet."""
    from architectures import ARCHITECTURES

    available = set(ARCHITECTURES) | {"timing", "components"}
    landed = [r for r in runs if r.architecture in available]
    skipped = sorted({r.architecture for r in runs if r.architecture not in available})
    if any(str(r.updates.get("device", "cpu")).startswith("cuda") for r in landed):
        import torch

        if not torch.cuda.is_available():
            print("no CUDA on this machine: the cuda runs are skipped", file=sys.stderr)
            landed = [r for r in landed if not str(r.updates.get("device", "cpu")).startswith("cuda")]
    return landed, skipped


def announce(plan: Plan, scale: str, overrides: Overrides) -> None:
    """The sweep, its overrides, how many runs are done and to do, and the time estimate."""
    sweep, landed, todo = plan.sweep, plan.landed, plan.todo
    diverged = sum(plan.records[r.run_id].state == DIVERGED for r in landed)
    print(f"sweep {sweep.name} ({scale}): {sweep.description}", file=sys.stderr)
    if overrides.text():
        print(f"every cell {overrides.text()}", file=sys.stderr)
    print(f"{len(landed)} runs, {len(landed) - len(todo)} already completed"
          f"{f' ({diverged} of them diverged)' if diverged else ''}, {len(todo)} to run; "
          f"estimated {plan.minutes * len(todo) / max(1, len(landed)):.1f} min on a 2-core machine; store: "
          f"{plan.where}", file=sys.stderr)
    if plan.skipped:
        print(f"not landed yet, skipped: {', '.join(plan.skipped)}", file=sys.stderr)
