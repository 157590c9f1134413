"""Where vector_env's env step goes: the lockstep round trip it had against the one it has.

    python -m experiments.benches.vector_trip                                    # 2 envs, a 1 ms busy step
    python -m experiments.benches.vector_trip --envs 8 --wait-us 2000 --cost-us 0 --steps 20000

`lockstep` runs vector_env's loop as it was at dc629ec, on gymnasium's AsyncVectorEnv
(shared-memory observations, spawned processes, autoreset off), with a stamp at every part of a
vector step: act for all envs, send (step_async: a pickled command per env), the owed learning,
the wait for the first env's reply and then for the slowest's, the receive (a pickled reply per env)
with the observations' copy, the replay store, and the second round trip that resets ended
episodes. Each env stamps its own step (`info`), so the env's part is apart from the pipes'.
`async` runs vector_env as it is and reads the same parts from its result: the command's way to
the env, the env's step, the answer's wait until the main process took it, and the main process's
act, store, send, receive and blocked wait. Both print microseconds per env step beside the
bound the issue names: the cores over the CPU an env step needs (the env's step, the act and store,
utd x an update), and the rate each reached. Every part is a wall time on a machine that may be
shared: compare parts within one run, and rates side by side (experiments.benches.parallel).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import time

from multiprocessing.connection import wait

import gymnasium as gym
import numpy as np

from experiments.benches.parallel import COMMON


class Stamped(gym.Wrapper):
    """Stamps its step's start and end in `info` (made in the env's process)."""

    def step(self, action):
        began = time.perf_counter()
        out = self.env.step(action)
        out[4]["stamp"] = (began, time.perf_counter())
        return out


def _make(env_id: str, cost_us: float, wait_us: float) -> gym.Env:
    from architectures.core.envs import make_env

    return Stamped(make_env(env_id, cost_us, wait_us))


def lockstep(n: int, steps: int, cost_us: float, wait_us: float) -> dict:
    """vector_env's loop of dc629ec on AsyncVectorEnv, every part of each vector step timed."""
    import torch
    from gymnasium.vector import AsyncVectorEnv, AutoresetMode

    from architectures.core.config import DQNConfig
    from architectures.core.dqn import build_learner
    from architectures.core.envs import env_spec
    from architectures.core.metrics import NullReporter
    from architectures.core.networks import GreedyPolicy
    from architectures.core.replay import make_replay
    from architectures.core.schedules import EpsilonSchedule
    from architectures.run.acting import EpisodeStream
    from architectures.run.base import Run
    from architectures.run.learning import ReplayLearning

    torch.set_num_threads(1)
    cfg = DQNConfig(**{**COMMON, "total_env_steps": steps, "eval_every": steps, "num_workers": n,
                       "env_step_cost_us": cost_us, "env_step_wait_us": wait_us})
    spec = env_spec(cfg.env_id)
    learner, replay = build_learner(spec, cfg), make_replay(cfg, spec.obs_shape, spec.obs_dtype)
    learning = ReplayLearning(Run("vector_env", cfg, NullReporter(), learner.online), learner, replay, sources=n)
    policy, epsilon = GreedyPolicy(learner.online, np.random.default_rng(0)), EpsilonSchedule(1.0, 0.05, 20_000)
    streams = [EpisodeStream(cfg, i) for i in range(n)]
    envs = AsyncVectorEnv([functools.partial(_make, cfg.env_id, cost_us, wait_us)] * n, shared_memory=True,
                          context="spawn", autoreset_mode=AutoresetMode.DISABLED)
    parts = dict.fromkeys(("act", "send", "learn", "wait_first", "wait_slowest", "receive_copy", "store",
                           "reset_trip", "to_env", "env_step", "to_main"), 0.0)
    try:
        obs, _ = envs.reset(seed=[s.episode_seed for s in streams])
        env_steps, perf = 0, time.perf_counter
        began = perf()
        while env_steps < steps:
            t0 = perf()
            actions = policy.act_batch(obs, epsilon(env_steps))
            t1 = perf()
            envs.step_async(actions)
            t2 = perf()
            learning.learn_owed(env_steps)
            t3 = perf()
            pipes = list(envs.parent_pipes)
            wait(pipes)  # the first env's reply is in
            t4 = perf()
            for pipe in pipes:
                pipe.poll(None)
            t5 = perf()
            next_obs, rewards, terminated, truncated, info = envs.step_wait()
            t6 = perf()
            env_steps += n
            for i, stream in enumerate(streams):
                for transition in stream.record(obs[i], int(actions[i]), rewards[i], next_obs[i], terminated[i],
                                                truncated[i], learner.version):
                    replay.add(transition)
            t7 = perf()
            done = terminated | truncated
            if done.any():
                envs.reset_async(seed=[s.episode_seed if d else None for s, d in zip(streams, done)],
                                 options={"reset_mask": done})
                next_obs[done] = envs.reset_wait()[0][done]
            obs = next_obs
            stamps = np.array(info["stamp"].tolist())  # (N, 2): each env's step, begun and ended
            for key, value in (("act", t1 - t0), ("send", t2 - t1), ("learn", t3 - t2), ("wait_first", t4 - t3),
                               ("wait_slowest", t5 - t4), ("receive_copy", t6 - t5), ("store", t7 - t6),
                               ("reset_trip", perf() - t7)):
                parts[key] += value
            parts["to_env"] += float((stamps[:, 0] - t1).sum()) / n
            parts["env_step"] += float((stamps[:, 1] - stamps[:, 0]).sum()) / n
            parts["to_main"] += float((t5 - stamps[:, 1]).sum()) / n
        seconds = perf() - began
    finally:
        envs.close(terminate=True)
    # the env's parts are per env: each env step is one of them; the main process's per vector step
    per_step = {k: 1e6 * v / (env_steps if k not in ("to_env", "env_step", "to_main") else env_steps / n)
                for k, v in parts.items()}
    return {"env_steps_per_sec": env_steps / seconds, "us_per_env_step": per_step,
            "update_us": 1e6 * learning.update_s / max(1, learner.version)}


def asynchronous(n: int, steps: int, cost_us: float, wait_us: float) -> dict:
    """vector_env as it is: its own result's round trip and time breakdown, per env step."""
    from architectures.core.config import DQNConfig
    from architectures.designs import vector_env

    result = vector_env.train(DQNConfig(**{**COMMON, "total_env_steps": steps, "eval_every": steps, "num_workers": n,
                                           "env_step_cost_us": cost_us, "env_step_wait_us": wait_us}))
    rows = result["time_breakdown"]
    per_step = {k: rows[k]["seconds"] * 1e6 / steps for k in ("act", "send", "recv", "env_wait", "replay_add")}
    per_step["learn"] = sum(rows[k]["seconds"] for k in ("sample", "update", "diagnostics") if k in rows) * 1e6 / steps
    per_step.update(result["round_trip_us"])
    return {"env_steps_per_sec": result["env_steps_per_sec"], "us_per_env_step": per_step,
            "update_us": rows["update"]["us_per_call"], "bottleneck": result["bottleneck"]["summary"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, default=2)
    parser.add_argument("--cost-us", type=float, default=1000.0, help="busy CPU per env step")
    parser.add_argument("--wait-us", type=float, default=0.0, help="blocking wait per env step")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--paths", nargs="+", default=["lockstep", "async"], choices=["lockstep", "async"])
    parser.add_argument("--json", help="write both breakdowns here")
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    out = {}
    for path in args.paths:
        fn = lockstep if path == "lockstep" else asynchronous
        out[path] = r = fn(args.envs, args.steps, args.cost_us, args.wait_us)
        parts = r["us_per_env_step"]
        print(f"\n{path}: {r['env_steps_per_sec']:,.0f} env steps/s; an update {r['update_us']:,.0f} us", flush=True)
        print("  per env step, us: " + ", ".join(f"{k} {v:,.1f}" for k, v in parts.items()))
        main_cpu = sum(v for k, v in parts.items() if k in ("act", "send", "recv", "receive_copy", "store",
                                                            "replay_add", "learn", "reset_trip"))
        env_cpu = parts["env_step"] - args.wait_us
        bound = cores * 1e6 / (env_cpu + main_cpu) if env_cpu + main_cpu > 0 else math.inf
        envs_bound = args.envs * 1e6 / (parts["env_step"])
        print(f"  CPU per env step: env {env_cpu:,.0f} us, main process {main_cpu:,.0f} us -> bound "
              f"{min(bound, envs_bound):,.0f} env steps/s on {cores} cores; reached "
              f"{r['env_steps_per_sec'] / min(bound, envs_bound):.0%}")
        if "bottleneck" in r:
            print(f"  bottleneck: {r['bottleneck']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
