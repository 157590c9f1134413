"""Run a named sweep end to end, resumably: `python -m experiments.sweep NAME [options] [with ...]`.

    python -m experiments.sweep smoke                  # every landed architecture, ~2 minutes
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
(experiments/run_records.py): COMPLETED with a result is done, and one whose result says it
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
import ctypes
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from architectures.registry import NAMES, PARALLEL
from experiments.run_records import ABSENT, DIVERGED, RunRecord, after_run, classify, read_run_folder, tally
from experiments.sweeps import RUNS_AT_ONCE_ENV, SCALES, SEED_SETS, SWEEPS, Sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCHITECTURE_CONFIGS = NAMES  # every design has a named config of its own name (experiments/configs.py)
PARALLEL_ARCHITECTURES = PARALLEL  # a main process plus num_workers


@dataclass(frozen=True)
class Overrides:
    """`with NAMED ... KEY=VALUE ...` from the sweep's command line, applied to every cell."""

    named: tuple[str, ...] = ()
    updates: dict = field(default_factory=dict)

    @staticmethod
    def parse(tokens: list[str]) -> "Overrides":
        from sacred.arg_parser import get_config_updates

        updates, named = get_config_updates(tokens)
        return Overrides(tuple(named), updates)

    def text(self) -> str:
        """As typed: `with cartpole lr=0.001` (empty without overrides)."""
        items = [*self.named, *(f"{k}={_sacred_value(v)}" for k, v in sorted(self.updates.items()))]
        return f"with {' '.join(items)}" if items else ""

    def digest(self) -> str:
        key = json.dumps({"named": self.named, "updates": self.updates}, sort_keys=True)
        return hashlib.sha1(key.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    architecture: str
    named: tuple[str, ...]
    updates: dict
    seed: int
    experiment: str = "train"
    overrides: str = ""
    """The sweep's `with ...` text this run carries (shown in its label and stored with it)."""

    def sacred_args(self) -> list[str]:
        return ["with", *self.named, *(f"{k}={_sacred_value(v)}" for k, v in sorted(self.updates.items())),
                f"seed={self.seed}"]

    def config(self) -> dict:
        """The run's config as Sacred resolves it: defaults, then each named config, then overrides."""
        from experiments.configs import resolve

        return resolve(self.named, {**self.updates, "seed": self.seed})

    def processes(self) -> int:
        """Processes the run keeps busy: the CPUs a Ray task reserves for it."""
        if self.architecture not in PARALLEL_ARCHITECTURES:
            return 1
        return int(self.config().get("num_workers", 1)) + 1

    def label(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in sorted(self.updates.items()) if k not in _QUIET_KEYS)
        text = f"{' '.join(self.named)} seed={self.seed} {extra}".strip()
        return f"{text} [{self.overrides}]" if self.overrides else text


def _sacred_value(value) -> str:
    """A value as Sacred's `with key=value` parses it: Python literals (True, not JSON's true),
    strings as they are."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return repr(value)
    return json.dumps(value)


_QUIET_KEYS = {"eval_episodes", "log_every", "eval_every", "learning_starts", "eps_decay_steps", "buffer_size"}


def one_env(cells: list, overrides: Overrides) -> list:
    """With `env_id` overridden, the cells of the sweep's first env only: a grid that also holds
    MinAtar cells (scaling, the paper-scale headline) would otherwise run the user's env twice,
    under two envs' learner settings, and the report would pool them as one env's points."""
    if "env_id" not in overrides.updates or not cells:
        return cells
    envs = [next((n for n in c.named if n not in ARCHITECTURE_CONFIGS), None) for c in cells]
    return [c for c, env in zip(cells, envs) if env == envs[0]]


def lower_priority(niceness: int = 10) -> None:
    """`--nice`: this process and its children below normal priority. On Linux with autogroups
    (the default scheduler setting), nice ranks a process only within its session's group, and a
    sweep started in its own session (nohup, setsid, a CI step) took a fair half of a 2-core
    machine from the measurements beside it whatever its nice. When the sweep leads its own
    session (`setsid`), its group holds only it and its runs, and the group's nice is lowered too
    (/proc/self/autogroup); a sweep in a terminal's session leaves that session's group alone."""
    os.nice(niceness)
    if not hasattr(os, "getsid") or os.getsid(0) != os.getpid():
        return
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(19 if niceness >= 10 else niceness))
    except OSError:  # no autogroups here (or not Linux): nice alone is what there is
        pass


def expand(sweep: Sweep, scale: str, seeds: int | None, overrides: Overrides | None = None) -> list[RunSpec]:
    """The sweep's runs: every cell, with `overrides` after the cell's own named configs and
    updates (as Sacred applies them), crossed with the seeds; ids hash the resolved cell."""
    overrides = overrides or Overrides()
    runs = []
    for cell in one_env(sweep.cells[scale], overrides):
        experiment = cell.experiment or sweep.experiment
        if experiment != "train":
            architecture = experiment  # not an architecture: always available
        else:
            architecture = next((n for n in cell.named if n in ARCHITECTURE_CONFIGS),
                                cell.updates.get("architecture", "single_env"))
        named, updates = (*cell.named, *overrides.named), {**cell.updates, **overrides.updates}
        for seed in SEED_SETS[sweep.seed_set][:seeds or sweep.seeds[scale]]:
            resolved = {"named": named, "updates": updates, "seed": seed}
            if cell.experiment:  # a cell of its own experiment is another run, whatever its config
                resolved["experiment"] = cell.experiment
            key = json.dumps(resolved, sort_keys=True)
            run_id = f"{sweep.name}-{hashlib.sha1(key.encode()).hexdigest()[:10]}"
            runs.append(RunSpec(run_id, architecture, named, updates, seed, experiment, overrides.text()))
    if sweep.interleave:  # seed by seed; the sort is stable, so cells keep their order within a seed
        order = SEED_SETS[sweep.seed_set]
        runs.sort(key=lambda run: order.index(run.seed))
    return runs


def pick_cells(runs: list[RunSpec], patterns: str) -> list[RunSpec]:
    """`--cells A/B,C`: only the runs of the cells whose named configs (and experiment) include
    every `/`-separated name of some pattern, e.g. `minatar_breakout_cpu/high_utd`; a `key=value`
    part must equal the run's resolved setting of that key, defaults included
    (`cartpole/high_utd/utd=4/layer_norm=True/reset_period=0`), for grids such as `utd` whose cells
    differ only there. The ids stay the whole sweep's, so a part
    made now is the same runs the whole sweep would skip later
    (tests/test_sweep.py::test_cells_picks_part_of_a_sweep_with_the_whole_sweeps_ids). No pattern,
    or one that picks nothing, is a ValueError naming it and the cells there are."""
    def cells() -> str:  # for the error only
        return ", ".join(sorted({"/".join(r.named) + ("" if r.experiment == "train" else "/" + r.experiment)
                                 for r in runs}))

    def matches(parts: list[str], run: RunSpec) -> bool:
        names = set(run.named) | {run.experiment}
        config = run.config() if any("=" in part for part in parts) else {}
        for part in parts:
            key, eq, value = part.partition("=")
            if not (config.get(key.strip(), _MISSING) == _literal(value) if eq else part in names):
                return False
        return True

    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    if not wanted:
        raise ValueError(f"--cells: no pattern given (got {patterns!r}); this sweep's cells: {cells()}")
    chosen = [[part.strip() for part in p.split("/")] for p in wanted]
    for pattern, parts in zip(wanted, chosen):
        if not any(matches(parts, run) for run in runs):
            raise ValueError(f"--cells: {pattern!r} names no cell of this sweep; its cells: {cells()}")
    return [run for run in runs if any(matches(parts, run) for parts in chosen)]


_MISSING = object()


def _literal(text: str):
    """`4` -> 4, `True` -> True, `'a'`/`a` -> 'a': a `--cells` value as Sacred would read it."""
    import ast
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return text.strip()


TIMING_KEYS = ("network", "batch_size", "torch_threads", "device", "updates", "warmup")
"""The keys of the timing experiment (experiments/timing.py): what a timing sweep may override."""


def check_runs(runs: list[RunSpec], overrides: Overrides) -> None:
    """Build every run's config before any run starts: a bad key or value is one ConfigError."""
    from architectures.core.config import ConfigError, DQNConfig
    from architectures.core.envs import env_spec
    from experiments.configs import NAMED_CONFIGS

    for name in overrides.named:
        if name not in NAMED_CONFIGS:
            raise ConfigError(f"with {name}: unknown named config (valid: {', '.join(NAMED_CONFIGS)})")
        if name in ARCHITECTURE_CONFIGS:  # it would relabel every cell's design behind the sweep's back
            raise ConfigError(f"with {name}: an architecture's named config; the sweep's cells choose the "
                              "architecture (pick a sweep, or `python -m experiments.train with ...` for one design)")
    for key in ("architecture", "seed"):
        if key in overrides.updates:
            raise ConfigError(f"{key}: set by the sweep itself (each cell's architecture, --seeds), not by `with`")
    envs = set()
    for run in runs:
        if run.experiment == "timing":
            unknown = sorted(set(overrides.updates) - set(TIMING_KEYS))
            if unknown:
                raise ConfigError(f"{unknown[0]}: not a key of the timing experiment (valid: {', '.join(TIMING_KEYS)})")
            continue
        config = {k: v for k, v in run.config().items() if k != "architecture"}
        config["checkpoint_path"] = f"{run.run_id}.pt"  # every sweep run gets one (run_command)
        envs.add(DQNConfig.from_dict(config).env_id)
    for env_id in sorted(envs):  # the spaces DQN needs, from one probe env each
        env_spec(env_id)


# ---------------------------------------------------------------------- stores
class FileStore:
    def __init__(self, out: str):
        self.out = out

    def check(self) -> None:
        try:
            os.makedirs(self.out, exist_ok=True)
            probe = os.path.join(self.out, f".write-probe-{os.getpid()}")
            with open(probe, "w") as f:
                f.write("ok")
            os.remove(probe)
        except OSError as err:
            raise SystemExit(f"error: --out {self.out!r} is not writable: {err.strerror or err}") from None

    def record(self, run_id: str) -> RunRecord:
        return read_run_folder(os.path.join(self.out, run_id))

    def clear_incomplete(self, run_id: str) -> None:
        path = os.path.join(self.out, run_id)
        if os.path.exists(path):
            aside = os.path.join(self.out, "_incomplete")
            os.makedirs(aside, exist_ok=True)
            shutil.move(path, os.path.join(aside, f"{run_id}-{time.strftime('%Y%m%dT%H%M%S')}"))

    def observer_args(self) -> list[str]:
        return ["-F", self.out]


class MongoStore(FileStore):
    """Runs in MongoDB (`runs` collection); per-run logs still go under --out."""

    def __init__(self, url: str, out: str):
        super().__init__(out)
        from experiments.train import mongo_target

        self.url, self.db_name = mongo_target(url)

    def check(self) -> None:
        super().check()
        import pymongo

        try:
            self.client = pymongo.MongoClient(self.url, serverSelectionTimeoutMS=3000)
            self.client.admin.command("ping")
        except Exception as err:  # noqa: BLE001 - any failure to reach the server stops us here
            raise SystemExit(f"error: --mongo {self.url!r} is unreachable: {err}") from None
        self.runs = self.client[self.db_name]["runs"]

    def record(self, run_id: str) -> RunRecord:
        doc = self.runs.find_one({"_id": run_id}, {"status": 1, "result": 1})
        return classify(doc) if doc else RunRecord(ABSENT)

    def clear_incomplete(self, run_id: str) -> None:
        """Deletes the run's document unless it counts (COMPLETED with a result)."""
        if not self.record(run_id).counts:
            self.runs.delete_one({"_id": run_id})

    def observer_args(self) -> list[str]:
        return ["--mongo", self.url]


# ---------------------------------------------------------------------- running
def _die_with_parent() -> None:
    """In the child, before exec: get SIGKILL when the sweep dies, so a killed sweep leaves no
    run going on alone (Linux only; elsewhere the run finishes on its own)."""
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run_command(run: RunSpec, store: FileStore) -> list[str]:
    args = run.sacred_args()
    if run.experiment == "train":  # a killed run resumes from its last checkpoint, at every holdout checkpoint
        config = run.config()
        args.append(f"checkpoint_path={os.path.join(store.out, '_checkpoints', run.run_id + '.pt')}")
        if not config.get("checkpoint_every"):
            args.append(f"checkpoint_every={config['eval_every']}")
    comment = ["--comment", run.overrides] if run.overrides else []  # the report labels the run with it
    return [sys.executable, "-m", f"experiments.{run.experiment}", *args, "--id", run.run_id, "-l", "WARNING",
            *comment, *store.observer_args()]


def run_logged(cmd: list[str], log_path: str, quiet: bool, at_once: int = 1) -> int:
    """Run one sweep run's command to its end, its output in `log_path`; returns its exit code.
    Called in the sweep's process, or inside a Ray task on any node of the cluster (whose CPU
    reservations keep runs apart: at_once stays 1 there)."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore:pkg_resources is deprecated", RUNS_AT_ONCE_ENV: str(at_once)}
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        # The run's own progress bar goes to the terminal when runs go one at a time.
        stderr = log if quiet else None
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=stderr, env=env, preexec_fn=_die_with_parent)
        return proc.wait()


def launch(run: RunSpec, store: FileStore, log_dir: str, quiet: bool, at_once: int = 1) -> int:
    return run_logged(run_command(run, store), os.path.join(log_dir, f"{run.run_id}.log"), quiet, at_once)


class RayRunner:
    """`--ray ADDRESS`: each run is a Ray task reserving `run.processes()` CPUs (at most the
    biggest node's), running the same command as `launch`."""

    def __init__(self, address: str):
        from architectures.core.config import ConfigError
        from architectures.transport.ray_support import check_ray_address, import_ray

        try:
            self.ray = import_ray()
            check_ray_address(address)
        except ConfigError as err:
            raise SystemExit(f"error: --ray: {str(err).split(': ', 1)[1]}") from None
        self.address, self.owns = address, False

    def start(self) -> None:
        from architectures.core.config import ConfigError
        from architectures.core.limits import available_cores
        from architectures.transport.ray_support import connect

        try:
            self.owns = connect(self.ray, "" if self.address == "local" else self.address, available_cores())
        except ConfigError as err:
            raise SystemExit(f"error: --ray: {str(err).split(': ', 1)[1]}") from None
        nodes = [node for node in self.ray.nodes() if node.get("Alive")]
        self.max_cpus = max(int(node["Resources"].get("CPU", 0)) for node in nodes)
        self.task = self.ray.remote(max_retries=0)(run_logged)
        print(f"Ray: {len(nodes)} node(s), {int(self.ray.cluster_resources().get('CPU', 0))} CPUs, at most "
              f"{self.max_cpus} per run", file=sys.stderr)

    def launch(self, run: RunSpec, store: FileStore, log_dir: str) -> int:
        cpus = min(run.processes(), self.max_cpus)
        if cpus < run.processes():
            print(f"run {run.run_id} has {run.processes()} processes; the biggest node has {self.max_cpus} CPUs, "
                  f"so it reserves {cpus}", file=sys.stderr, flush=True)
        ref = self.task.options(num_cpus=cpus).remote(run_command(run, store),
                                                      os.path.join(log_dir, f"{run.run_id}.log"), True)
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayError as err:  # the task's node or worker died
            print(f"run {run.run_id}: its Ray task failed: {str(err).strip().splitlines()[0]}", file=sys.stderr)
            return -1

    def close(self) -> None:
        if self.owns:
            self.ray.shutdown()


def summary_line(run: RunSpec, status: str | None, result: dict) -> str:
    if "update_us_median" in result:  # a timing run: one gradient step, median microseconds
        speed = f"{result['update_us_median']:>6,.0f} us"
    else:
        speed = f"{result['env_steps_per_sec']:>9,.0f}" if "env_steps_per_sec" in result else f"{'-':>9}"
    ret = result.get("final_holdout_return")
    ret_text = f"{ret:>8.1f}" if isinstance(ret, (int, float)) and ret == ret else f"{'-':>8}"
    return f"{run.run_id:<24} {str(status or 'not run'):<11} {speed} {ret_text}  {run.label()}"


def hold_store_lock(out: str):
    """An exclusive lock on <out>/.sweep.lock for this process's life, or exit 2 naming its holder."""
    import fcntl

    handle = open(os.path.join(out, ".sweep.lock"), "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        raise SystemExit(f"error: another sweep ({holder}) is running on the store {out!r}; wait for it or "
                         "use another --out") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage="%(prog)s NAME [options] [with NAMED ... KEY=VALUE ...]")
    parser.add_argument("name", help=f"one of: {', '.join(SWEEPS)}")
    parser.add_argument("--seeds", type=int, help="seeds per grid cell (default: the sweep's, per scale)")
    parser.add_argument("--out", help="run store and logs (default: results/sweeps/NAME, or NAME-with-<hash of the overrides>)")
    parser.add_argument("--mongo", metavar="URL", help="store runs in MongoDB, e.g. mongodb://localhost:27017/dqn")
    parser.add_argument("--dry-run", action="store_true", help="list the runs and the estimate; run nothing")
    parser.add_argument("--nice", action="store_true", help="run below normal priority (os.nice 10)")
    parser.add_argument("--scale", choices=SCALES, default="small", help="budgets: small (default) or paper")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (learning-only sweeps; pollutes timing)")
    parser.add_argument("--ray", metavar="ADDRESS", help="run each run as a Ray task with CPU reservations: "
                        "'local' (start Ray here), 'auto' (the running cluster), or HOST:PORT / ray://HOST:PORT")
    parser.add_argument("--cells", metavar="A/B,C",
                        help="only the cells whose named configs include every name of a pattern and "
                             "whose settings equal its key=value parts, e.g. minatar_breakout_cpu/high_utd "
                             "or cartpole/high_utd/utd=4/layer_norm=True (the run ids stay the whole sweep's)")
    parser.add_argument("--report", nargs="?", const="", metavar="DIR",
                        help="after the runs, build the analysis report from this store into DIR "
                             "(default: <out>/report)")
    argv = list(sys.argv[1:] if argv is None else argv)
    with_tokens: list[str] = []
    if "with" in argv:  # Sacred's syntax after the options: with NAMED ... KEY=VALUE ...
        at = argv.index("with")
        argv, with_tokens = argv[:at], argv[at + 1:]
        if not with_tokens:
            parser.exit(2, "error: with: name a config or KEY=VALUE after it, e.g. with lr=0.001\n")
    args = parser.parse_args(argv)
    try:
        overrides = Overrides.parse(with_tokens)
    except Exception as err:  # noqa: BLE001 - Sacred's parser raises several kinds
        parser.exit(2, f"error: with: {err}\n")

    if args.name not in SWEEPS:
        parser.exit(2, f"error: unknown sweep {args.name!r}; valid sweeps: {', '.join(SWEEPS)}\n")
    if args.seeds is not None and args.seeds < 1:
        parser.exit(2, f"error: --seeds must be >= 1 (got {args.seeds})\n")
    if args.seeds is not None and args.name in SWEEPS and args.seeds > len(SEED_SETS[SWEEPS[args.name].seed_set]):
        seed_set = SWEEPS[args.name].seed_set
        parser.exit(2, f"error: --seeds: the {seed_set} seed set has {len(SEED_SETS[seed_set])} seeds "
                       f"(got {args.seeds}); add seeds to SEED_SETS in experiments/sweeps.py\n")
    if args.jobs < 1:
        parser.exit(2, f"error: --jobs must be >= 1 (got {args.jobs})\n")
    sweep = SWEEPS[args.name]
    default_out = sweep.name + (f"-with-{overrides.digest()}" if overrides.text() else "")
    out = args.out or os.path.join(ROOT, "results", "sweeps", default_out)
    store = MongoStore(args.mongo, out) if args.mongo else FileStore(out)
    store.check()  # an unwritable --out or unreachable --mongo stops us before any run
    ray_runner = RayRunner(args.ray) if args.ray else None  # no Ray or an unreachable address: stop here too
    from architectures import ARCHITECTURES

    runs = expand(sweep, args.scale, args.seeds, overrides)
    whole = len(runs)  # the sweep's estimate is for all of it
    if args.cells is not None:
        try:
            runs = pick_cells(runs, args.cells)
        except ValueError as err:
            parser.exit(2, f"error: {err}\n")
    from architectures.core.config import ConfigError

    try:
        check_runs(runs, overrides)
    except ConfigError as err:
        parser.exit(2, f"error: {err}\n")
    available = set(ARCHITECTURES) | {"timing", "components"}
    landed = [r for r in runs if r.architecture in available]
    skipped = sorted({r.architecture for r in runs if r.architecture not in available})
    if any(str(r.updates.get("device", "cpu")).startswith("cuda") for r in landed):
        import torch

        if not torch.cuda.is_available():
            print("no CUDA on this machine: the cuda runs are skipped", file=sys.stderr)
            landed = [r for r in landed if not str(r.updates.get("device", "cpu")).startswith("cuda")]
    records = {r.run_id: store.record(r.run_id) for r in landed}
    todo = [r for r in landed if not records[r.run_id].counts]
    diverged = sum(records[r.run_id].state == DIVERGED for r in landed)
    minutes = sweep.minutes[args.scale] * len(landed) / max(1, whole)
    print(f"sweep {sweep.name} ({args.scale}): {sweep.description}", file=sys.stderr)
    if overrides.text():
        print(f"every cell {overrides.text()}", file=sys.stderr)
    print(f"{len(landed)} runs, {len(landed) - len(todo)} already completed"
          f"{f' ({diverged} of them diverged)' if diverged else ''}, {len(todo)} to run; "
          f"estimated {minutes * len(todo) / max(1, len(landed)):.1f} min on a 2-core machine; store: "
          f"{args.mongo or out}", file=sys.stderr)
    if skipped:
        print(f"not landed yet, skipped: {', '.join(skipped)}", file=sys.stderr)
    if args.dry_run:
        for r in landed:
            print(summary_line(r, records[r.run_id].label(), {}))
        return 0
    lock = hold_store_lock(out)  # a second sweep on this store would move our running run aside
    if args.nice:
        lower_priority()
    if ray_runner and todo:
        ray_runner.start()
        args.jobs = max(1, len(todo))  # Ray queues the runs and starts as many as the CPUs allow
    elif args.jobs > 1:
        print(f"warning: --jobs {args.jobs} runs share the CPU; their throughput numbers are not comparable "
              f"with runs made one at a time", file=sys.stderr)
    log_dir = os.path.join(out, "_logs")
    started = time.monotonic()
    finished = [0]  # runs ended so far (a list: the worker threads update it)
    estimate_s = minutes * 60 / max(1, len(landed))  # per run, from the sweep's estimate

    def run_one(index_run: tuple[int, RunSpec]) -> None:
        index, run = index_run
        done = finished[0]
        per_run = (time.monotonic() - started) * args.jobs / done if done else estimate_s
        eta = per_run * (len(todo) - done) / args.jobs
        filled = round(20 * done / max(1, len(todo)))
        print(f"[{'#' * filled}{'.' * (20 - filled)}] run {index + 1}/{len(todo)}, ETA {eta / 60:.1f} min: "
              f"{run.run_id} {run.label()}", file=sys.stderr, flush=True)
        try:
            store.clear_incomplete(run.run_id)
            code = (ray_runner.launch(run, store, log_dir) if ray_runner
                    else launch(run, store, log_dir, quiet=args.jobs > 1, at_once=args.jobs))
        except OSError as err:  # e.g. the disk filled up between runs
            print(f"run {run.run_id} could not start: {err}", file=sys.stderr, flush=True)
            return
        finally:
            finished[0] += 1
        record = store.record(run.run_id)  # what the run stored decides, not its exit code
        said = after_run(run.run_id, record, code)
        if said:
            log = "" if record.counts else f"; log: {os.path.join(log_dir, run.run_id + '.log')}"
            print(said + log, file=sys.stderr, flush=True)

    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(run_one, enumerate(todo)))
    finally:
        if ray_runner:
            ray_runner.close()

    print(f"\n{'run':<24} {'status':<11} {'speed':>9} {'return':>8}  config")
    records = {r.run_id: store.record(r.run_id) for r in landed}
    for r in landed:
        print(summary_line(r, records[r.run_id].label(), records[r.run_id].result))
    line, failed = tally([r.run_id for r in todo], records, (time.monotonic() - started) / 60)
    print(f"\n{line}", file=sys.stderr)
    lock.close()
    if args.report is not None:
        from analysis import report as analysis_report

        report_dir = args.report or os.path.join(out, "report")
        print(f"\nreport: building figures, tables and numbers from {args.mongo or out} into {report_dir}/",
              file=sys.stderr)
        built = analysis_report.main(["--runs", args.mongo or out, "--out", report_dir, "--cache", ""])
        failed += [] if built == 0 else ["(report)"]
    if failed:
        print(f"failed: {', '.join(failed)} (rerun the same command to retry them)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
