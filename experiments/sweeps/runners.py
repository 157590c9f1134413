"""How a sweep's runs are started: each run's command (one Sacred run of its experiment, in its own
process), run to its end with its output in a log (`launch`, or `RayRunner` for Ray tasks), the
summary line a run gets, and the process settings around it (`lower_priority`; each run is started with
`architectures.core.lifetime.die_with_parent`, so a killed sweep leaves no run going on alone)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from architectures.core.lifetime import die_with_parent

if TYPE_CHECKING:
    from experiments.sweeps.grid import RunSpec
    from experiments.sweeps.stores import FileStore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
# Only the standard library (and architectures.core.lifetime, the same) at the top: a run's
# preexec_fn and the modules that import this one load nothing heavy through it.


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


def run_logged(cmd: list[str], log_path: str, quiet: bool, at_once: int = 1, meta: dict | None = None) -> int:
    """Run one sweep run's command to its end, its output in `log_path`; returns its exit code.
    Called in the sweep's process, or inside a Ray task on any node of the cluster (whose CPU
    reservations keep runs apart: at_once stays 1 there). `meta`: its cell's, for its result."""
    import json

    from experiments.sweeps.spec import CELL_META_ENV, RAY_NODE_ENV, RUNS_AT_ONCE_ENV

    env = {**os.environ, "PYTHONWARNINGS": "ignore:pkg_resources is deprecated", RUNS_AT_ONCE_ENV: str(at_once)}
    env.pop(CELL_META_ENV, None)  # never inherited: a run stores only its own cell's
    if meta:
        env[CELL_META_ENV] = json.dumps(meta, sort_keys=True)
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():  # in a Ray task: the run records its node
        from architectures.transport.ray_support import this_node

        env[RAY_NODE_ENV] = json.dumps(this_node())
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        # The run's own progress bar goes to the terminal when runs go one at a time.
        stderr = log if quiet else None
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=stderr, env=env, preexec_fn=die_with_parent)
        return proc.wait()


def run_in_task(cmd: list[str], log_path: str, store_args: tuple, run_id: str, meta: dict | None = None) -> int:
    """A `--ray` sweep's task: `run_logged`, after moving aside any record an earlier attempt
    left (Ray runs the task again when its node was lost; the run resumes from its checkpoint)."""
    from experiments.sweeps.stores import FileStore, MongoStore

    store = MongoStore(*store_args) if len(store_args) == 2 else FileStore(*store_args)
    if len(store_args) == 2:
        store.check()  # connects
    store.clear_incomplete(run_id)
    return run_logged(cmd, log_path, True, meta=meta)


def launch(run: RunSpec, store: FileStore, log_dir: str, quiet: bool, at_once: int = 1) -> int:
    return run_logged(run_command(run, store), os.path.join(log_dir, f"{run.run_id}.log"), quiet, at_once, run.meta)


class RayRunner:
    """`--ray ADDRESS`: each run is a Ray task reserving `run.processes()` CPUs (at most the
    biggest node's), running the same command as `launch`. A run whose node is lost is run again
    elsewhere (`RETRIES` times; it resumes from its checkpoint in the shared store) once Ray has
    declared the node dead: Ray's own task retries came sooner and could land on the lost node's
    freed CPUs. A run that no live node can hold any more is said at once and left for the
    rerun, never waited for in silence."""

    RETRIES = 2
    """Times a run is started again after its node or worker died (not after the run failed)."""
    WATCH_S = 10.0
    """While a run waits, how often the live nodes are counted again."""

    def __init__(self, address: str):
        from architectures.core.config import ConfigError
        from architectures.transport.ray_support import check_ray_joinable, import_ray

        try:
            self.ray = import_ray()
            check_ray_joinable(address)
        except ConfigError as err:
            sys.stderr.write(f"error: --ray: {str(err).split(': ', 1)[1]}\n")  # a refusal: exit 2, as usage errors
            raise SystemExit(2) from None
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
        self.task = self.ray.remote(max_retries=0)(run_in_task)  # launch() runs it again, once Ray knows
        print(f"Ray: {len(nodes)} node(s), {int(self.ray.cluster_resources().get('CPU', 0))} CPUs, at most "
              f"{self.max_cpus} per run", file=sys.stderr)

    def launch(self, run: RunSpec, store: FileStore, log_dir: str) -> int:
        cpus = min(run.processes(), self.max_cpus)
        if cpus < run.processes():
            print(f"run {run.run_id} has {run.processes()} processes; the biggest node has {self.max_cpus} CPUs, "
                  f"so it reserves {cpus}", file=sys.stderr, flush=True)
        store_args = (store.url, store.out) if hasattr(store, "url") else (store.out,)
        for attempt in range(self.RETRIES + 1):
            if self.biggest_live_node() < cpus:
                return self.unplaceable(run, cpus)
            alive = self.live_nodes()
            ref = self.task.options(num_cpus=cpus).remote(run_command(run, store),
                                                          os.path.join(log_dir, f"{run.run_id}.log"), store_args,
                                                          run.run_id, run.meta)
            try:
                while not self.ray.wait([ref], timeout=self.WATCH_S)[0]:  # blocks; wakes to count the nodes
                    if self.biggest_live_node() < cpus:  # its node was lost and no other can take it
                        self.ray.cancel(ref, force=True)
                        return self.unplaceable(run, cpus)
                return self.ray.get(ref)
            except self.ray.exceptions.RayError as err:  # the task's node or worker died
                why = str(err).strip().splitlines()[0]
                if attempt == self.RETRIES:
                    print(f"run {run.run_id}: its Ray task failed: {why}", file=sys.stderr, flush=True)
                    return -1
                print(f"run {run.run_id}: its node or worker was lost ({why}); running it again "
                      f"({attempt + 1} of {self.RETRIES})", file=sys.stderr, flush=True)
                self.until_declared_dead(alive)
        return -1

    def live_nodes(self) -> set[str]:
        return {node["NodeID"] for node in self.ray.nodes() if node.get("Alive")}

    def until_declared_dead(self, alive: set[str], timeout_s: float = 30.0) -> None:
        """Wait (bounded) until Ray declares a lost node dead: until then it offers the lost node's
        freed CPUs, and the run started again would be lost with it again."""
        end = time.monotonic() + timeout_s
        while alive <= self.live_nodes() and time.monotonic() < end:
            time.sleep(0.5)

    def biggest_live_node(self) -> int:
        return max([int(node["Resources"].get("CPU", 0)) for node in self.ray.nodes() if node.get("Alive")] or [0])

    def unplaceable(self, run: RunSpec, cpus: int) -> int:
        print(f"run {run.run_id} needs {cpus} CPUs on one node and no live node has them (the biggest has "
              f"{self.biggest_live_node()}): left for the rerun", file=sys.stderr, flush=True)
        return -2

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
