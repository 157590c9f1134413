"""What plan measures beyond the components (experiments/components/measure.py): the update at each
torch thread count, each in a fresh process, and the env step as plan will meet it, from which
plan estimates its own time before it starts."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout


MEASURE_CORES = 16
"""plan measures on at most this many of the machine's cores (the largest machine the suite has
measured on) and the model scales its terms to all of them: the processes a measurement starts
(vector_env's envs at 2 x cores, hogwild's workers and actor_learner's actors at the cores, the
co-runners of `contention`) would otherwise grow with the cores, and plan's time with them."""


@contextlib.contextmanager
def on_cores(count: int):
    """This process and the processes it starts meanwhile run on `count` of its cores (the first
    of its affinity), as on a machine of that size; its affinity is given back after."""
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    allowed = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, allowed[:max(1, count)])
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


def last_line(proc: subprocess.CompletedProcess) -> str:
    """A failed child's last line of stderr, or its exit code when it said nothing."""
    return (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}, nothing on stderr"])[-1]


def update_threads(cfg, cores: int) -> dict[int, float]:
    """The update's median us at 1 .. min(cores, 4) torch threads, in fresh processes."""
    out = {}
    for threads in range(1, min(cores, 4) + 1):
        code = ("import json, sys; from experiments.plan.measure import _update_us; "
                f"print(json.dumps(_update_us({cfg.to_dict()!r}, {threads})))")
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            out[threads] = json.loads(proc.stdout.strip().splitlines()[-1])
        else:  # said, not dropped: the recommendation then keeps 1 thread
            print(f"  update at {threads} torch thread(s) could not be timed: {last_line(proc)}", file=sys.stderr)
    return out


def _update_us(config: dict, threads: int) -> float:
    import numpy as np
    import torch

    from architectures.core.config import DQNConfig
    from architectures.core.dqn import build_learner
    from architectures.core.envs import env_spec
    from experiments.components.alone import timed

    torch.set_num_threads(threads)
    cfg = DQNConfig.from_dict(config)
    spec = env_spec(cfg.env_id)
    learner = build_learner(spec, cfg)
    rng, b = np.random.default_rng(0), cfg.batch_size
    obs = rng.random((b, *spec.obs_shape)).astype(spec.obs_dtype)
    batch = {"obs": obs, "next_obs": obs.copy(), "action": rng.integers(0, spec.num_actions, b),
             "reward": rng.random(b).astype(np.float32), "discount": np.full(b, 0.99, np.float32)}
    return timed(lambda: learner.update(batch), 30, blocks=5)["us"]


FIXED_SECONDS, CONFIRM_RUNS, CONFIRM_START_S, FIXED_ENV_STEPS = 10.0, 4, 3.0, 55_000
"""plan's time, as estimate_seconds adds it up: start-up and the model, the confirming runs (the
recommendation and the runner-up, and the recommendation at learner_threads 1 and 2, each with its
process start) and the env steps its measurements take whatever the budget (the loops' shortest
runs, the vector envs' round trips). Fitted on this 2-core machine: the default config (CartPole,
~10 us a step) took 122 s, an env whose step took 2 ms 232 s, where 'about two minutes'
had been promised for both."""


def env_step_seconds(cfg, steps: int = 50, limit_s: float = 1.0) -> float:
    """The env's step as plan will meet it (its added cost and wait included), timed over up to
    `steps` steps or `limit_s` seconds, resets included: what plan's estimate scales with."""
    from architectures.core.envs import make_env

    env = make_env(cfg.env_id, cfg.env_step_cost_us, cfg.env_step_wait_us, cfg.max_episode_steps)
    try:
        env.reset(seed=0)
        began, done = time.perf_counter(), 0
        while done < steps and (done == 0 or time.perf_counter() - began < limit_s):
            if any(env.step(env.action_space.sample())[2:4]):
                env.reset()
            done += 1
        return (time.perf_counter() - began) / done
    finally:
        env.close()


def estimate_seconds(step_s: float, budget_s: float, confirm_s: float) -> float:
    """plan's time from the env's measured step (FIXED_SECONDS ...): the measurements' budget, the
    confirming runs (none with --no-confirm: confirm_s 0), and FIXED_ENV_STEPS at the env's pace."""
    confirming = CONFIRM_RUNS * (confirm_s + CONFIRM_START_S) if confirm_s else 0.0
    return FIXED_SECONDS + budget_s + confirming + FIXED_ENV_STEPS * step_s
