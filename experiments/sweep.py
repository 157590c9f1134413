"""Run a named sweep end to end, resumably: `python -m experiments.sweep NAME [options] [with ...]`.

    python -m experiments.sweep smoke                  # every landed design, ~2 minutes
    python -m experiments.sweep scaling --dry-run      # list the runs and the estimate, run nothing
    python -m experiments.sweep architectures --seeds 5 --mongo mongodb://localhost:27017/dqn
    python -m experiments.sweep smoke --ray auto       # runs as Ray tasks on a running cluster
    python -m experiments.sweep scaling with env_id=my_envs:MyEnv-v0 hidden_sizes=[256,256]

`with NAMED ... KEY=VALUE ...` (Sacred's own syntax) applies named configs and overrides to every
cell, after the cell's own: the grid runs on your env, network or budget. They are part of each
run's id (another override is another run; the same one resumes), shown in the listing, the
progress lines and the summary, stored with each run (its Sacred comment, which the report's
labels show), and by default the sweep's store is its own (`results/sweeps/NAME-with-<hash>`).
A bad key or value stops the sweep before any run, naming it (exit 2).

Every run is one Sacred run (`experiments.train`) in its own process, with a deterministic id
derived from its config (`<sweep>-<hash>`), stored under `--out` (files, the default) or in
MongoDB (`--mongo`). What a run stored, not its exit code, says whether it counts
(experiments/sweeps/records.py): COMPLETED with a result is done, and one whose result says it
diverged is counted apart; anything else failed. Started again after a kill, a sweep skips the
runs that count and reruns everything else; an incomplete run's folder is moved to
`<out>/_incomplete/` first, so no half-written run is ever counted. Runs go one at a time unless
`--jobs` says otherwise, so throughput numbers are not polluted by each other.

With `--ray ADDRESS` (`local` starts a Ray instance on this machine) every run is the same
command, started by a Ray task that reserves the run's processes in CPUs (num_workers + 1 for
the parallel architectures, else 1), so Ray spreads runs over the cluster's nodes and runs as
many at once as the CPUs allow. Each run is still a Sacred run writing to the store, which on a
multi-node cluster must be shared storage (`--out` on a shared filesystem) or `--mongo`; every
node needs this checkout and its venv at the same paths.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from experiments.sweeps import runners as sweep_runners
from experiments.sweeps.records import ABSENT, after_run, tally
from experiments.sweeps.grid import Overrides, RunSpec
from experiments.sweeps.plan import Plan, announce, plan_runs, runnable_here, usage_error  # noqa: F401
from experiments.sweeps.runners import lower_priority, summary_line
from experiments.sweeps.stores import hold_store_lock
from experiments.sweeps.catalog import SCALES, SEED_SETS, SWEEPS

USAGE = "%(prog)s NAME [options] [with NAMED ... KEY=VALUE ...]"


# ---------------------------------------------------------------------- the command line
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage=USAGE)
    parser.add_argument("name", help=f"one of: {', '.join(SWEEPS)}")
    parser.add_argument("--seeds", type=int, help="seeds per grid cell (default: the sweep's, per scale)")
    parser.add_argument("--out", help="run store and logs (default: results/sweeps/NAME, or NAME-with-<hash of the overrides>)")
    parser.add_argument("--mongo", metavar="URL", help="store runs in MongoDB, e.g. mongodb://localhost:27017/dqn")
    parser.add_argument("--allow-dirty", action="store_true",
                        help="into results/reference/ from a tree with uncommitted changes (refused by default; "
                             "each run stores its diff beside its record either way)")
    parser.add_argument("--dry-run", action="store_true", help="list the runs and the estimate; run nothing")
    parser.add_argument("--nice", action="store_true", help="run below normal priority (os.nice 10)")
    parser.add_argument("--scale", choices=SCALES, default="small", help="budgets: small (default) or paper")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (learning-only sweeps; pollutes timing)")
    parser.add_argument("--rest", type=float, default=0.0, metavar="S",
                        help="seconds the machine rests before each run it starts (timing runs one at a time: on a "
                             "2-core machine a run right after a 16-worker run was ~10%% slower; docs/benchmarks.md)")
    parser.add_argument("--ray", metavar="ADDRESS", help="run each run as a Ray task with CPU reservations: "
                        "'local' (start Ray here), 'auto' (the running cluster), or HOST:PORT / ray://HOST:PORT")
    parser.add_argument("--cells", metavar="A/B,C",
                        help="only the cells whose named configs include every name of a pattern and "
                             "whose settings equal its key=value parts, e.g. minatar_breakout_cpu/high_utd "
                             "or cartpole/high_utd/utd=4/layer_norm=True (the run ids stay the whole sweep's)")
    parser.add_argument("--report", nargs="?", const="", metavar="DIR",
                        help="after the runs, build the analysis report from this store into DIR "
                             "(default: <out>/report)")
    return parser


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, Overrides]:
    """The options, and the `with ...` overrides after them; bad input exits 2, naming it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    with_tokens: list[str] = []
    if "with" in argv:  # Sacred's syntax after the options: with NAMED ... KEY=VALUE ...
        at = argv.index("with")
        argv, with_tokens = argv[:at], argv[at + 1:]
        if not with_tokens:
            usage_error("with: name a config or KEY=VALUE after it, e.g. with lr=0.001")
    args = _parser().parse_args(argv)
    try:
        overrides = Overrides.parse(with_tokens)
    except Exception as err:  # noqa: BLE001 - Sacred's parser raises several kinds
        usage_error(f"with: {err}")

    if args.name not in SWEEPS:
        usage_error(f"unknown sweep {args.name!r}; valid sweeps: {', '.join(SWEEPS)}")
    if args.seeds is not None and args.seeds < 1:
        usage_error(f"--seeds must be >= 1 (got {args.seeds})")
    available = len(SEED_SETS[SWEEPS[args.name].seed_set]) - SWEEPS[args.name].seed_skip
    if args.seeds is not None and args.seeds > available:
        seed_set = SWEEPS[args.name].seed_set
        usage_error(f"--seeds: the {seed_set} seed set has {available} seeds for this sweep "
                    f"(got {args.seeds}); add seeds to SEED_SETS in experiments/sweeps/catalog.py")
    if args.jobs < 1:
        usage_error(f"--jobs must be >= 1 (got {args.jobs})")
    return args, overrides


# ---------------------------------------------------------------------- running
def runs_at_once(plan: Plan, jobs: int) -> int:
    """`--jobs`, or with Ray every run to do (Ray queues them and starts as many as the CPUs allow)."""
    if plan.ray and plan.todo:
        plan.ray.start()
        return max(1, len(plan.todo))
    if jobs > 1:
        print(f"warning: --jobs {jobs} runs share the CPU; their throughput numbers are not comparable "
              f"with runs made one at a time", file=sys.stderr)
    return jobs


def run_all(plan: Plan, jobs: int, started: float, rest_s: float = 0.0) -> None:
    """Every run to do, `jobs` at once, each with a progress line before it and, after it, what
    its stored record says of it (not its exit code); `rest_s` idle seconds before each run starts."""
    log_dir = os.path.join(plan.out, "_logs")
    todo, store = plan.todo, plan.store
    finished = [0]  # runs ended so far (a list: the worker threads update it)
    flying: dict[str, bool] = {}  # run ids in flight, in start order
    starting = threading.Lock()
    estimate_s = plan.minutes * 60 / max(1, len(plan.landed))  # per run, from the sweep's estimate

    def run_one(index_run: tuple[int, RunSpec]) -> None:
        index, run = index_run
        if stopping or (rest_s and stopped.wait(rest_s)):  # Ctrl-C (also during the rest): no run starts after it
            return
        done = finished[0]
        per_run = (time.monotonic() - started) * jobs / done if done else estimate_s
        eta = per_run * (len(todo) - done) / jobs
        filled = round(20 * done / max(1, len(todo)))
        with starting:  # of runs starting together, the later names the earlier
            others = list(flying)  # the runs in flight beside this one
            print(f"[{'#' * filled}{'.' * (20 - filled)}] run {index + 1}/{len(todo)}, ETA {eta / 60:.1f} min: "
                  f"{run.run_id} {run.label()}" + (f" (also running: {', '.join(others)})" if others else ""),
                  file=sys.stderr, flush=True)
            flying[run.run_id] = True
        try:
            store.clear_incomplete(run.run_id)
            code = (plan.ray.launch(run, store, log_dir) if plan.ray
                    else sweep_runners.launch(run, store, log_dir, quiet=jobs > 1, at_once=jobs))
        except OSError as err:  # e.g. the disk filled up between runs
            print(f"run {run.run_id} could not start: {err}", file=sys.stderr, flush=True)
            return
        finally:
            finished[0] += 1
            flying.pop(run.run_id, None)
        record = store.record(run.run_id)  # what the run stored decides, not its exit code
        said = after_run(run.run_id, record, code)
        if said and not stopping:  # after Ctrl-C, the sweep's one line says it all
            log = "" if record.counts else f"; log: {os.path.join(log_dir, run.run_id + '.log')}"
            print(said + log, file=sys.stderr, flush=True)

    stopping: list[bool] = []  # non-empty once Ctrl-C came
    stopped = threading.Event()  # the same, for a run resting before it starts
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        list(pool.map(run_one, enumerate(todo)))
    except KeyboardInterrupt:
        # Ctrl-C reached the runs too (one process group): each records itself INTERRUPTED and
        # exits. Wait for that, start nothing new, and take no second Ctrl-C meanwhile.
        stopping.append(True)
        stopped.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if plan.ray:
            plan.ray.close()


def interrupted_line(plan: Plan) -> str:
    """What Ctrl-C left of the sweep, and how to go on, in one line."""
    records = {r.run_id: plan.store.record(r.run_id) for r in plan.landed}
    done = sum(record.counts for record in records.values())
    cut = [r for r in plan.todo if not records[r.run_id].counts and records[r.run_id].state != ABSENT]
    return (f"error: interrupted (Ctrl-C): {done} of {len(plan.landed)} runs are complete and kept in {plan.where}"
            + (f"; {len(cut)} interrupted ({', '.join(r.run_id for r in cut)}): recorded as not complete, "
               "redone from its last checkpoint" if cut else "")
            + "; run the same command again to resume (completed runs are skipped)")


# ---------------------------------------------------------------------- the outcome
def summarise(plan: Plan, started: float) -> list[str]:
    """The table of every landed run as stored now, and the tally; returns the failed runs."""
    print(f"\n{'run':<24} {'status':<11} {'steps/s':>9} {'return':>8}  config")
    records = {r.run_id: plan.store.record(r.run_id) for r in plan.landed}
    for r in plan.landed:
        print(summary_line(r, records[r.run_id].label(), records[r.run_id].result))
    print("steps/s: env steps per second over the whole run; the report counts them once learning has started "
          "(learning_starts on), so its speeds differ")
    line, failed = tally([r.run_id for r in plan.todo], records, (time.monotonic() - started) / 60)
    print(f"\n{line}", file=sys.stderr)
    return failed


def build_report(where: str, report_dir: str) -> bool:
    """analysis.report on the sweep's store; whether it built."""
    from analysis import report as analysis_report

    print(f"\nreport: building figures, tables and numbers from {where} into {report_dir}/", file=sys.stderr)
    return analysis_report.main(["--runs", where, "--out", report_dir, "--cache", ""]) == 0


def main(argv: list[str] | None = None) -> int:
    # Started with `&` from a script, a process inherits SIGINT ignored, and Python then leaves it so:
    # `kill -INT` to the group (docs/sweeps.md) would be silently lost, and the sweep go on starting
    # runs. Its runs, started from here, inherit the default again.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    args, overrides = parse(argv)
    plan = plan_runs(args, overrides)
    announce(plan, args.scale, overrides)
    if args.dry_run:
        for r in plan.landed:
            print(summary_line(r, plan.records[r.run_id].label(), {}))
        return 0
    lock = hold_store_lock(plan.out)  # a second sweep on this store would move our running run aside
    if args.nice:
        lower_priority()
    jobs = runs_at_once(plan, args.jobs)
    started = time.monotonic()
    try:
        run_all(plan, jobs, started, args.rest)
    except KeyboardInterrupt:
        lock.close()
        print(interrupted_line(plan), file=sys.stderr)
        return 130
    failed = summarise(plan, started)
    lock.close()
    if args.report is not None and not build_report(plan.where, args.report or os.path.join(plan.out, "report")):
        failed.append("(report)")
    if failed:
        print(f"failed: {', '.join(failed)} (rerun the same command to retry them)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
