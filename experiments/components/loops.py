"""Each component as a loop pays it, not warm and alone: single_env's own loop (its timers),
vector_env's round trip through its env processes, how much a loop like it on every other core
slows it (`contention`), and the median of repeated passes (`median_repeat`)."""

from __future__ import annotations

import statistics
import time

import numpy as np

from architectures.core.config import DQNConfig
from architectures.core.lifetime import die_with_parent
from experiments.components.alone import spread

REPEATS = 3
"""Passes over the loop-level costs (vector_env's round trip, single_env's and hogwild's loops):
the median pass is kept (`median_repeat`)."""
ONE_PASS_BELOW_S = 10.0
"""A component budget under this makes one pass, not REPEATS: each pass is then its floors (the
runs' start-ups and minimum env steps, ~10 s on 2 cores whatever the budget), so three would
triple a check the caller asked to be quick (plan --budget 2 in the tests) for medians of runs
too short to outlast a slow spell anyway."""


def passes(budget_s: float) -> int:
    """How many passes over the loop-level costs a component budget of `budget_s` makes."""
    return REPEATS if budget_s >= ONE_PASS_BELOW_S else 1


def vector_sizes(cores: int) -> list[int]:
    """The env counts at which vector_env's round trip is measured; the model interpolates."""
    return sorted({1, 2, cores, 2 * cores})


def median_repeat(repeats: list[dict]) -> dict:
    """Costs measured in several passes -> one: per cost (and per N or member of a group), the
    whole {us, p10, p90} of the pass whose `us` is the median (the lower middle of an even count)."""
    out: dict = {}
    for name, value in repeats[0].items():
        if "us" in value:
            ranked = sorted((r[name] for r in repeats), key=lambda v: v["us"])
            out[name] = ranked[(len(ranked) - 1) // 2]
        else:
            out[name] = median_repeat([r[name] for r in repeats])
    return out


def in_loop(cfg: DQNConfig, seconds: float) -> dict:
    """Each component's cost as single_env's own loop pays it (its timers, a short run, no
    evaluation): alone, a component is warm in the cache; in the loop the env step and the store
    between two updates evict it. The scaling sweep measured the update 9% and the sample 125%
    dearer in the loop than alone (CartPole, 2 cores), so the cost model takes these."""
    from architectures.designs.single_env import train

    probe = cfg.replace(total_env_steps=400, learning_starts=100, eval_episodes=0, log_every=400, eval_every=400,
                        checkpoint_every=0, checkpoint_path="")
    rate = train(probe)["env_steps_per_sec"]
    steps = int(min(100_000, max(2_000, seconds * rate)))
    result = train(probe.replace(total_env_steps=steps, learning_starts=steps // 5, log_every=steps, eval_every=steps))
    rows = result["time_breakdown"]
    return {name: {"us": rows[name]["us_per_call"], "p10": rows[name]["us_per_call"],
                   "p90": rows[name]["us_per_call"]} for name in ("act", "env_step", "replay_add", "sample", "update")}


def _short_loop(cfg: DQNConfig, steps: int) -> float:
    """single_env's loop for `steps` env steps (no evaluation): its env steps per second."""
    from architectures.designs.single_env import train

    return train(cfg.replace(total_env_steps=steps, learning_starts=steps // 5, eval_episodes=0, log_every=steps,
                             eval_every=steps, checkpoint_every=0, checkpoint_path=""))["env_steps_per_sec"]


def _busy(config: dict, steps: int, running, parent: int) -> None:
    """A co-runner: single_env's loop on the same config, one short run after another (it says
    so on `running` once its first run is done, so the measurement starts when it really runs)."""
    import os

    if not die_with_parent(parent):  # before importing torch: an orphan's window is its imports
        return  # it died before the death signal was armed
    import torch

    torch.set_num_threads(1)
    cfg = DQNConfig.from_dict(config)
    _short_loop(cfg, 500)
    running.release()
    while os.getppid() == parent:  # until the measuring process stops it, or is gone
        _short_loop(cfg, steps)


def contention(cfg: DQNConfig, cores: int, seconds: float) -> dict:
    """How much slower single_env's loop runs while a loop like it runs on every other core
    (shared caches, memory bandwidth, SMT siblings): the factor the model applies, in proportion,
    to processes that run at once. A co-runner doing bare updates back to back (the first way
    this was measured) slowed the update 2x, while two hogwild workers, each a loop of env steps,
    stores and updates, slowed each other 1.14x: the co-runner must be the same kind of loop."""
    import multiprocessing as mp
    import os

    probe = _short_loop(cfg, 400)
    steps = int(min(100_000, max(2_000, seconds * probe)))
    alone = [1e6 / _short_loop(cfg, steps) for _ in range(3)]
    if cores < 2:
        return {"us": 1.0, "p10": 1.0, "p90": 1.0}
    ctx = mp.get_context("spawn")
    running = ctx.Semaphore(0)
    others = [ctx.Process(target=_busy, args=(cfg.to_dict(), steps, running, os.getpid()),
                          daemon=True) for _ in range(cores - 1)]
    for proc in others:
        proc.start()
    try:
        for _ in others:  # every co-runner is in its loop before the clock starts
            if not running.acquire(timeout=120):
                dead = [p.exitcode for p in others if not p.is_alive()]
                raise RuntimeError(f"contention: a co-runner never started its loop (exit codes {dead})")
        busy = [1e6 / _short_loop(cfg, steps) for _ in range(3)]
    finally:
        for proc in others:
            proc.kill()
            proc.join()
    ratios = sorted(b / a for b, a in zip(sorted(busy), sorted(alone)))
    return {"us": float(np.median(busy) / np.median(alone)), "p10": ratios[0], "p90": ratios[-1]}


def vector_costs(cfg: DQNConfig, cores: int, policy, seconds: float, wait_us: float = 0.0) -> dict:
    """vector_env's env processes (transport.vector_envs) at each of `vector_sizes`, driven as its
    loop drives them with nothing to learn: take the envs that have answered, act on them in one
    batch, send them on, for `seconds` after a warm-up. Per env step: `vector_trip`, the wall time
    from an env's command to its answer taken (its step and the way there and back); `vector_main`,
    the main process's CPU (the act, the send, the polls and the answer's copies); `vector_env_cpu`,
    an env process's CPU (its step and its side of the hand-off). The round trip of vector_env's
    model (analysis/cost/designs.py `_vector_async`). The envs wait `wait_us` a step as the run's will, so the
    answers arrive as spread out as they will (with the wait off, 4 envs answered all at once and
    queued at the main process: 265 us a trip against ~35 us for one), and the wait is taken out
    of the trip (the model adds it); an env process's CPU keeps what its waits cost it."""
    from architectures.core.envs import env_spec
    from architectures.core.metrics import CpuMeter
    from architectures.run.acting import HeldObs
    from architectures.transport.vector_envs import vector_envs

    spec = env_spec(cfg.env_id)
    out: dict = {name: {} for name in ("vector_trip", "vector_main", "vector_env_cpu")}
    for n in vector_sizes(cores):
        run_cfg = cfg.replace(num_workers=n, env_step_wait_us=wait_us)
        with vector_envs("components", spec, run_cfg, [cfg.env_step_cost_us] * n) as envs:
            held, idle = HeldObs(envs.reset(range(n), list(range(n)))), list(range(n))
            meter = CpuMeter(lambda: envs.pids)

            def drive(until: float) -> None:
                nonlocal idle
                while time.perf_counter() < until:
                    envs.send(idle, policy.act_batch(held.obs[idle], 0.0).tolist(), [0] * len(idle))
                    idle = envs.recv()
                    for i in idle:
                        held.take(envs, i)

            drive(time.perf_counter() + min(0.5, seconds / 3))  # warm
            trip0, answered0, cpu0 = sum(envs.seconds[k] for k in ("to_env", "env_step", "to_main")), envs.answered, \
                meter.read()
            drive(time.perf_counter() + seconds)
            steps = max(1, envs.answered - answered0)
            cpu1 = meter.read()
            trip = sum(envs.seconds[k] for k in ("to_env", "env_step", "to_main")) - trip0 - wait_us * 1e-6 * steps
            for name, value in (("vector_trip", trip), ("vector_main", cpu1["main"] - cpu0["main"]),
                                ("vector_env_cpu", cpu1["workers"] - cpu0["workers"])):
                us = 1e6 * value / steps
                out[name][str(n)] = {"us": us, "p10": us, "p90": us}
            while envs.flying:  # every env in before they stop
                envs.recv()
    return out
