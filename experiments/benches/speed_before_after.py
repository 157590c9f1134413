"""A named sweep's cells at two commits, interleaved cell by cell: did a change make any design slower?

    git worktree add ../before bf140d7 && git -C ../before apply results/benchmarks/speed_before_after/before.patch
    git worktree add ../after HEAD
    python -m experiments.benches.speed_before_after --before ../before --after ../after --rounds 5 \\
        --before-out results/benchmarks/speed_before_after --after-out results/reference/speed

Each round is one seed. Within a round every cell of the sweep runs once in each checkout, the two
back to back (`python -m experiments.sweep SWEEP --cells CELL --seeds K`, each checkout with its own
Python and code), and which checkout goes first alternates from cell to cell and round to round, so
a drift of the machine's speed hits both alike. Completed runs are skipped, so a cut benchmark
resumes where it stopped. Both checkouts must define the sweep with the same cells (the before
commit gets them as a patch to its sweep catalog: only the harness, none of the code it measures).

Before each run the machine rests (`--rest`, 30 s by default, passed to the sweep, which rests only
before a run it starts, not one it skips as completed): on this 2-core machine a run started
right after a 16-worker run was ~10% slower than the same run started after a 30 s pause, whichever
checkout it came from (hogwild at 16 workers, 100k env steps: 4,697 and 4,805 env steps/s back to back,
5,553 after the pause; docs/benchmarks.md), so without the rest the first run of each pair had the
edge and the rounds' order, not the code, set the ratio.

It runs; it does not judge. The comparison (each cell's rate once learning starts, after over
before per round, against the rounds' own spread) is `python -m analysis.before_after` on the two
stores: analysis/ reads stored runs, experiments/ makes them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys


MAX_ROUNDS = 10
"""The evaluation seeds a reference sweep has (101-110): a round is one of them."""


def cell_patterns(checkout: str, sweep: str) -> list[str]:
    """The `--cells` pattern of each of `sweep`'s cells in `checkout`, one cell each, in the sweep's
    order: its named configs and design, and its worker count where it has one."""
    code = ("from experiments.sweeps.catalog import SWEEPS\n" if os.path.isdir(os.path.join(checkout, "experiments", "sweeps"))
            else "from experiments.sweeps import SWEEPS\n")
    code += (f"s = SWEEPS[{sweep!r}]\n"
             "for c in s.cells['small']:\n"
             "    parts = list(c.named) + ([f\"num_workers={c.updates['num_workers']}\"] if 'num_workers' in c.updates else [])\n"
             "    print('/'.join(parts))\n")
    done = subprocess.run([python(checkout), "-c", code], cwd=checkout, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"error: {checkout}: cannot read sweep {sweep!r}: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout.split()


def select(cells: list[str], patterns: str | None) -> list[str]:
    """The cells each of whose parts one of the comma-separated `patterns` includes, in order (every
    cell without patterns): a benchmark too long for one sitting runs a part of the sweep at a time."""
    if not patterns:
        return list(cells)
    wanted = [set(p.split("/")) for p in patterns.split(",") if p]
    return [c for c in cells if any(w <= set(c.split("/")) for w in wanted)]


def python(checkout: str) -> str:
    """The checkout's own interpreter (its .venv), else this one."""
    own = os.path.join(checkout, ".venv", "bin", "python")
    return own if os.path.exists(own) else sys.executable


def schedule(cells: list[str], rounds: int) -> list[tuple[int, str, str]]:
    """(seed count, cell, which checkout) in the order they run: round by round, every cell in both
    checkouts back to back, the first of each pair alternating from cell to cell and round to round."""
    order = []
    for k in range(1, rounds + 1):
        for i, cell in enumerate(cells):
            pair = ("before", "after") if (i + k) % 2 == 0 else ("after", "before")
            order += [(k, cell, side) for side in pair]
    return order


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.benches.speed_before_after",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="checkout of the commit before the change")
    parser.add_argument("--after", required=True, help="checkout of the commit after it (clean, for reference runs)")
    parser.add_argument("--sweep", default="speed", help="the named sweep whose cells run (default: %(default)s)")
    parser.add_argument("--cells", default=None,
                        help="only the cells each of whose parts a pattern names, e.g. 'cartpole' (the busy-step cells) "
                             "or 'practitioner_shape/hogwild'; comma-separated patterns (default: every cell)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, one seed each (default: %(default)s)")
    parser.add_argument("--before-out", default="results/benchmarks/speed_before_after",
                        help="the before checkout's store, relative to it (default: %(default)s)")
    parser.add_argument("--after-out", default="results/reference/speed",
                        help="the after checkout's store, relative to it (default: %(default)s)")
    parser.add_argument("--rest", type=float, default=30.0,
                        help="seconds the machine rests before each run (default: %(default)s; see above)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the runs in their order, then stop (without the checkouts: the arguments only)")
    args = parser.parse_args(argv)
    if not 2 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--rounds: must be 2 to {MAX_ROUNDS} (a cell's verdict weighs its rounds' spread; the "
                     f"sweep has {MAX_ROUNDS} evaluation seeds)")
    if args.dry_run and not all(os.path.isdir(getattr(args, side)) for side in ("before", "after")):
        print(f"speed_before_after: {args.rounds} rounds of {args.sweep!r} in {args.before} and {args.after} "
              "(dry run: the checkouts are not there yet; nothing run)", file=sys.stderr)
        return 0
    cells = {side: cell_patterns(getattr(args, side), args.sweep) for side in ("before", "after")}
    if cells["before"] != cells["after"]:
        parser.error(f"the two checkouts' {args.sweep!r} cells differ: before {cells['before']}, after {cells['after']}")
    picked = select(cells["after"], args.cells)
    if not picked:
        parser.error(f"--cells {args.cells!r}: no cell of {args.sweep!r} matches; its cells: {cells['after']}")
    order = schedule(picked, args.rounds)
    print(f"{len(order)} runs: {len(picked)} cells x {args.rounds} rounds x 2 checkouts", flush=True)
    for n, (k, cell, side) in enumerate(order, 1):
        checkout, out = getattr(args, side), getattr(args, f"{side}_out")
        command = [python(checkout), "-m", "experiments.sweep", args.sweep, "--cells", cell, "--seeds", str(k),
                   "--out", out, "--rest", str(args.rest)]
        print(f"[{n}/{len(order)}] round {k}, {side}: {cell}", flush=True)
        if args.dry_run:
            continue
        done = subprocess.run(command, cwd=checkout)
        if done.returncode != 0:
            print(f"error: {side} {cell} round {k} failed (exit {done.returncode}); rerun the same command to resume",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
