"""Each component as a loop pays it, not warm and alone: single_env's own loop (its timers),
AsyncVectorEnv's round trips inside vector_env's loop, how much a loop like it on every other
core slows it (`contention`), and the median of repeated passes (`median_repeat`)."""

from __future__ import annotations

import functools
import statistics
import time

import numpy as np

from architectures.core.config import DQNConfig
from experiments.components_alone import spread
from experiments.sweep_runners import die_with_parent

REPEATS = 3
"""Passes over the loop-level costs (vector_env's round trips, single_env's and hogwild's loops):
the median pass is kept (`median_repeat`)."""


def vector_sizes(cores: int) -> list[int]:
    """The env counts at which AsyncVectorEnv's round trip is measured; the model interpolates."""
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

    die_with_parent()  # before importing torch: an orphan's window is its imports
    if os.getppid() != parent:  # it died before the death signal was armed
        return
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


def vector_costs(cfg: DQNConfig, cores: int, learner, policy, replay, rng) -> dict:
    """AsyncVectorEnv for N envs: step_async, step_wait once the results are there, the two back
    to back (the round trip: the envs' step plus the IPC), and vector_env's loop without its
    bookkeeping: act for all envs, send, learn what is owed meanwhile, receive (the batched act
    and the round trip as the loop pays them: the learning beside the envs stretches their reply
    and leaves the act cold; measured idle, they missed a 1 ms env's run by up to 35%)."""
    from fractions import Fraction

    from gymnasium.vector import AsyncVectorEnv, AutoresetMode

    from architectures.core.envs import make_env
    from architectures.transport import janitor

    janitor.install()
    out: dict = {name: {} for name in ("vector_round_trip", "vector_send", "vector_recv", "vector_act_in_loop",
                                       "vector_round_trip_learning")}
    for n in vector_sizes(cores):
        envs = AsyncVectorEnv([functools.partial(make_env, cfg.env_id, cfg.env_step_cost_us)] * n,
                              shared_memory=True, context="spawn", autoreset_mode=AutoresetMode.NEXT_STEP)
        try:
            obs, _ = envs.reset(seed=list(range(n)))
            actions = np.zeros(n, dtype=np.int64)
            rt = []
            for _ in range(60):
                began = time.perf_counter()
                envs.step_async(actions)
                envs.step_wait()
                rt.append(1e6 * (time.perf_counter() - began))
            sends, recvs = [], []
            for _ in range(40):
                began = time.perf_counter()
                envs.step_async(actions)
                sends.append(1e6 * (time.perf_counter() - began))
                time.sleep(max(0.002, 3e-6 * statistics.median(rt)))  # the envs are done by now
                began = time.perf_counter()
                envs.step_wait()
                recvs.append(1e6 * (time.perf_counter() - began))
            owed, per_step, acts, loops = Fraction(0), Fraction(str(cfg.utd)) * n, [], []
            for i in range(20 + int(max(150, 4 / max(float(per_step), 1e-3)))):  # whole update cycles
                began = time.perf_counter()
                actions = policy.act_batch(obs, 0.0)
                acted = time.perf_counter()
                envs.step_async(actions)
                owed += per_step
                while owed >= 1:
                    learner.update(replay.sample(cfg.batch_size, rng))
                    owed -= 1
                obs = envs.step_wait()[0]
                if i >= 20:
                    acts.append(1e6 * (acted - began))
                    loops.append(1e6 * (time.perf_counter() - acted))
        finally:
            envs.close(terminate=True)
        key = str(n)
        out["vector_round_trip"][key], out["vector_send"][key] = spread(rt[10:]), spread(sends)
        out["vector_recv"][key], out["vector_act_in_loop"][key] = spread(recvs), spread(acts)
        out["vector_round_trip_learning"][key] = {"us": float(np.mean(loops)), "p10": float(np.percentile(loops, 10)),
                                                  "p90": float(np.percentile(loops, 90))}
    return out
