"""The prepared script for a lent machine with many cores and a GPU: one call, one archive.

    python -m experiments.on_device --out $OUT/device          # everything, in under 8 minutes
    python -m experiments.on_device --minutes 3 --only plan    # a part of it

On the lent machine (no package registry there), carry the wheels `../shared/gpu-machine/wheels.sh`
downloads and install them as it says, then run the line above. In order, each step given a share
of the time left and skipped, saying so, when it is spent:
1. `cuda_tests`: `pytest -m cuda -x` (the CUDA paths: the learner, the device replay, the CUDA
   graph against the eager update, every design with a CUDA learner); a failure stops every CUDA
   step after it;
2. `plan`: `plan --no-confirm` on the busy shape (the env step burns 2.2 ms of CPU): the learner
   measured in the loop on the CPU and on CUDA, every design predicted with each, written before
   any run of the steps below;
3. `busy_cpu`, `busy_cuda`: the busy shape's single_env and actor_learner at 1-16 actors, the learner
   on the CPU, then on CUDA;
4. `busy_others`: vector_env and hogwild at 4, 8, 12 and 16 workers (hogwild on the CPU: its workers
   share CPU parameters);
5. `device_sweep`: one gradient step, CPU against CUDA's host-batch, device and graph updates.
`manifest.json` names what ran (command, exit code, seconds, log) and what was skipped and why, and
the whole --out folder is packed into one archive, `<out>.tgz`. Without CUDA the CUDA steps are
skipped and the rest runs, shorter (`--env-steps`), so the script is tried here end to end first.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUSY_SHAPE = ["env_step_cost_us=2200", "env_step_wait_us=0"]
"""The practitioner's shape with the env's 2.2 ms as CPU in the process that steps it."""
WORKERS = (4, 8, 12, 16)
SMALL_WORKERS = (4, 8)
"""vector_env's and hogwild's counts, and actor_learner's beyond single_env, on a machine under 8 cores
(the CPU-only form's check here): the other cells ask a many-core question, and their runs' start-up
took the form past 8 minutes on 2 cores."""


@dataclass(frozen=True)
class Step:
    name: str
    command: list[str]
    share: float  # of the time left, against the shares of the steps still to come
    cuda: bool = False  # needs CUDA (skipped without it, or once the CUDA tests failed)


PLAN_WITH = ["practitioner_shape", *BUSY_SHAPE]
"""What plan weighs by default: the busy shape (its loops take ~2 min of env steps at 2.2 ms a step)."""


def cuda_test_files() -> list[str]:
    """The test files that hold `cuda` tests: only they are collected (the rest need test-only packages
    a lent machine may lack)."""
    import glob

    return sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "test_*.py")) if "mark.cuda" in open(p).read())


def steps(py: str, out: str, env_steps: int, plan_budget: float, plan_with: list[str] | None = None,
          device_cells: str | None = None, small: bool = False) -> list[Step]:
    """The script's steps in order (tests/test_on_device.py checks their order and that each parses).
    `small`: a machine under 8 cores, where the busy shape runs at SMALL_WORKERS only."""
    workers = SMALL_WORKERS if small else WORKERS
    shape = [*BUSY_SHAPE, f"total_env_steps={env_steps}"]
    sweep = [py, "-m", "experiments.sweep", "seed_shape", "--seeds", "1"]
    main = "practitioner_shape/single_env," + (",".join(f"practitioner_shape/actor_learner/num_workers={n}"
                                                         for n in workers) if small else "practitioner_shape/actor_learner")
    others = ",".join(f"practitioner_shape/{design}/num_workers={n}" for design in ("vector_env", "hogwild")
                      for n in workers)
    cells = ["--cells", device_cells] if device_cells else []
    return [Step("cuda_tests", [py, "-m", "pytest", "-m", "cuda", "-x", "-q", "-p", "no:cacheprovider",
                                "-o", "addopts=", *cuda_test_files()], 0.2, cuda=True),
            Step("plan", [py, "-m", "experiments.plan", "--no-confirm", "--budget", f"{plan_budget:g}", "--out",
                          os.path.join(out, "plan"), "with", *(plan_with or PLAN_WITH)], 0.5),
            Step("busy_cpu", [*sweep, "--out", os.path.join(out, "busy-cpu"), "--cells", main, "with", *shape], 0.15),
            Step("busy_cuda", [*sweep, "--out", os.path.join(out, "busy-cuda"), "--cells", main, "with", *shape,
                               "device=cuda"], 0.2, cuda=True),
            Step("busy_others", [*sweep, "--out", os.path.join(out, "busy-others"), "--cells", others, "with", *shape],
                 0.15),
            Step("device_sweep", [py, "-m", "experiments.sweep", "device", "--out", os.path.join(out, "device-sweep"),
                                  *cells], 0.1)]


def _run(cmd: list[str], log_path: str, timeout_s: float) -> dict:
    """Run one step in its own process group; past its time the whole group is stopped (a sweep's
    runs and their workers die with it)."""
    began = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code: int | str = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)  # a sweep records its running run as interrupted
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            code = "timeout"
    return {"command": " ".join(cmd[1:]), "exit": code, "seconds": round(time.monotonic() - began, 1),
            "log": os.path.basename(log_path)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "device"))
    parser.add_argument("--minutes", type=float, default=7.5, help="time limit for everything (default 7.5)")
    parser.add_argument("--env-steps", type=int, default=0,
                        help="env steps per shape run (default: 12,000 with 8 cores or more, else 1,500)")
    parser.add_argument("--only", action="append", help="run only these steps (by name)")
    parser.add_argument("--plan-with", nargs="+", metavar="NAMED_OR_KEY=VALUE",
                        help=f"what plan weighs (default: {' '.join(PLAN_WITH)})")
    parser.add_argument("--device-cells", metavar="A/B,C", help="only these cells of the device sweep (its --cells)")
    parser.add_argument("--dry-run", action="store_true", help="list the steps and what would be skipped, then stop")
    args = parser.parse_args(argv)
    import torch

    from architectures.core.limits import available_cores
    from experiments.tracking.host import cpu_model

    cores, cuda = available_cores(), torch.cuda.is_available()
    env_steps = args.env_steps or (12_000 if cores >= 8 else 1_500)
    deadline = time.monotonic() + 60 * args.minutes
    plan = steps(sys.executable, args.out, env_steps, plan_budget=30 if cores >= 8 else 5, plan_with=args.plan_with,
                 device_cells=args.device_cells, small=cores < 8)
    unknown = set(args.only or []) - {s.name for s in plan}
    if unknown:
        parser.error(f"--only: unknown step(s) {', '.join(sorted(unknown))} (valid: {', '.join(s.name for s in plan)})")
    if args.dry_run:
        for step in (s for s in plan if not args.only or s.name in args.only):
            skipped = "skipped: no CUDA here" if step.cuda and not cuda else "runs"
            print(f"{step.name}: {skipped}: {' '.join(step.command[1:])}", file=sys.stderr)
        return 0
    os.makedirs(args.out, exist_ok=True)
    manifest = {"host": {"cores": cores, "cuda": cuda, "gpu": torch.cuda.get_device_name(0) if cuda else None,
                         "cpu": cpu_model(), "torch": torch.__version__}, "env_steps_per_shape_run": env_steps,
                "minutes": args.minutes, "steps": {}}
    chosen = [s for s in plan if not args.only or s.name in args.only]
    cuda_failed = False
    for i, step in enumerate(chosen):
        left = deadline - time.monotonic()
        to_run = [s for s in chosen[i:] if not (s.cuda and (not cuda or cuda_failed))]  # a skipped step's time is shared
        budget = left * step.share / sum(s.share for s in to_run) if step in to_run else 0.0
        why = ("no CUDA on this machine" if step.cuda and not cuda else "the CUDA tests failed" if step.cuda and
               cuda_failed else f"{left:.0f} s left of the time limit" if budget < 20 else None)
        if why:
            manifest["steps"][step.name] = {"skipped": why}
            print(f"{step.name}: skipped ({why})", file=sys.stderr)
        else:
            print(f"{step.name}: up to {budget:.0f} s", file=sys.stderr, flush=True)
            done = manifest["steps"][step.name] = _run(step.command, os.path.join(args.out, f"{step.name}.log"), budget)
            cuda_failed = cuda_failed or (step.name == "cuda_tests" and done["exit"] != 0)
            print(f"{step.name}: exit {done['exit']} after {done['seconds']:.0f} s", file=sys.stderr, flush=True)
        with open(os.path.join(args.out, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
    archive = args.out.rstrip(os.sep) + ".tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(args.out, arcname=os.path.basename(args.out.rstrip(os.sep)))
    print(json.dumps(manifest, indent=1))
    print(f"wrote {archive}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
