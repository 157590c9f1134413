"""The prepared script for a lent GPU machine (16 cores, one GPU): one command, under 10 minutes.

    python -m experiments.on_device                      # everything, into results/device/
    python -m experiments.on_device --only plan --minutes 4

What it runs, in order, each part given a share of the time limit and skipped (with a line
saying so) when the time is spent:
1. `plan` for CartPole at env_step_cost_us 0 and 1000 (issue: a measured plan for a bigger
   machine): the components, CUDA's update with its host-to-device copy where CUDA is present,
   predictions at 1 .. 16 workers and 32, and the confirming runs;
2. the practitioner's shape with busy envs (issue 21): `seed_shape`'s cells, one seed, with the
   env step burning 2.2 ms of CPU instead of waiting (`env_step_cost_us=2200 env_step_wait_us=0`),
   on the machine's real cores, the learner of single_env, actor_learner and vector_env on CUDA
   where present (hogwild's workers share CPU tensors: on CPU); `plan --no-confirm` writes the
   cost model's prediction for that shape first, before any of the runs exist;
3. the `device` sweep: one gradient step on CPU against CUDA, per network and batch size;
4. the MinAtar Breakout cells of the `scaling` sweep at 1, 2, 4, 8 and 12 workers with their
   components (the conv update on CUDA is in part 3).
Everything lands under --out (default results/device/), with a `manifest.json` naming what ran,
how long it took and what was skipped. Without CUDA it still runs (the CUDA parts say they are
skipped), so it can be tried here first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = ("plan", "shape_busy", "device", "minatar_scaling")
BUSY_SHAPE = ["env_step_cost_us=2200", "env_step_wait_us=0"]
"""The practitioner's shape with the env's 2.2 ms as CPU in the process that steps it."""


def shape_busy_commands(py: str, out: str, cuda: bool) -> list[tuple[str, list[str]]]:
    """The shape_busy part's commands, in order: the prediction, then the runs (named, for the
    manifest). tests/test_plan.py::test_the_device_script_predicts_the_busy_shape_before_its_runs."""
    on_cuda = BUSY_SHAPE + (["device=cuda"] if cuda else [])
    sweep = [py, "-m", "experiments.sweep", "seed_shape", "--seeds", "1", "--out", os.path.join(out, "runs")]
    return [("predict", [py, "-m", "experiments.plan", "--no-confirm", "--budget", "30", "--out",
                         os.path.join(out, "plan"), "with", "practitioner_shape", *on_cuda]),
            ("runs", sweep + ["--cells", "practitioner_shape/single_env,practitioner_shape/actor_learner,"
                              "practitioner_shape/vector_env", "with", *on_cuda]),
            ("hogwild_runs", sweep + ["--cells", "practitioner_shape/hogwild", "with", *BUSY_SHAPE])]


def _run(cmd: list[str], log_path: str, timeout_s: float) -> dict:
    began = time.monotonic()
    with open(log_path, "w") as log:
        try:
            code = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    return {"command": " ".join(cmd[1:]), "exit": code, "seconds": round(time.monotonic() - began, 1),
            "log": os.path.relpath(log_path, ROOT)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "device"))
    parser.add_argument("--minutes", type=float, default=9.0, help="time limit for everything (default 9)")
    parser.add_argument("--only", choices=PARTS, action="append", help="run only these parts")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import torch

    from architectures.core.limits import available_cores
    from experiments.host import cpu_model

    cores, cuda = available_cores(), torch.cuda.is_available()
    deadline = time.monotonic() + 60 * args.minutes
    parts = args.only or list(PARTS)
    shares = {"plan": 0.25, "shape_busy": 0.4, "device": 0.1, "minatar_scaling": 0.25}
    py = sys.executable
    done = {"host": {"cores": cores, "cuda": cuda, "gpu": torch.cuda.get_device_name(0) if cuda else None,
                     "cpu": cpu_model()}, "parts": {}}
    for part in parts:
        left = deadline - time.monotonic()
        budget = min(left, 60 * args.minutes * shares[part])
        if budget < 30:
            done["parts"][part] = {"skipped": f"{left:.0f} s left of the limit"}
            print(f"{part}: skipped, {left:.0f} s left", file=sys.stderr)
            continue
        print(f"{part}: up to {budget:.0f} s", file=sys.stderr, flush=True)
        if part == "plan":
            runs = {}
            for cost in (0, 1000):
                out = os.path.join(args.out, f"plan-cartpole-cost{cost}")
                runs[f"cost{cost}"] = _run([py, "-m", "experiments.plan", "--out", out, "--budget", "30",
                                            "--confirm-seconds", "10", "with", "cartpole",
                                            f"env_step_cost_us={cost}"], out + ".log", budget / 2)
            done["parts"][part] = runs
        elif part == "shape_busy":
            out, runs, began = os.path.join(args.out, "shape-busy"), {}, time.monotonic()
            os.makedirs(out, exist_ok=True)
            for name, cmd in shape_busy_commands(py, out, cuda):
                left_here = budget - (time.monotonic() - began)
                if left_here < 20:
                    runs[name] = {"skipped": f"{left_here:.0f} s left of the part's share"}
                    continue
                runs[name] = _run(cmd, os.path.join(out, f"{name}.log"), left_here)
            done["parts"][part] = runs
        elif part == "device":
            out = os.path.join(args.out, "device-sweep")
            done["parts"][part] = _run([py, "-m", "experiments.sweep", "device", "--out", out], out + ".log", budget)
        else:
            out = os.path.join(args.out, "minatar-scaling")
            code = ("import sys; from experiments.sweeps import SWEEPS, Sweep, _scaling; "
                    "SWEEPS['scaling'] = Sweep('scaling', 'MinAtar Breakout cells on the lent machine', "
                    "{'small': 8, 'paper': 8}, {'small': _scaling({0.0: 20_000}, [1, 2, 4, 8, 12], "
                    "env='minatar_breakout_cpu'), 'paper': []}); "
                    "from experiments.sweep import main; sys.exit(main(sys.argv[1:]))")
            done["parts"][part] = _run([py, "-c", code, "scaling", "--out", out], out + ".log", budget)
        with open(os.path.join(args.out, "manifest.json"), "w") as f:
            json.dump(done, f, indent=1)
    print(json.dumps(done, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
