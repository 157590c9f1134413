"""vector_env: one process acts for `num_workers` envs at once; the envs step in subprocesses.

What many users pick today (SB3's SubprocVecEnv, CleanRL's envs): gymnasium's AsyncVectorEnv
with shared-memory observations. Same section order as single_env.py; what differs:
- acting is one batched forward pass for all envs (`GreedyPolicy.act_batch`);
- env stepping runs in the env subprocesses while this process does the learning it owes
  (step_async -> updates -> step_wait), so learning overlaps the simulator;
- episodes are reset by hand (autoreset disabled) so every env keeps the per-episode
  training seeds single_env uses (one `run.acting.EpisodeStream` per env);
- `utd` is updates per transition, as everywhere; a vector step adds `num_workers` env steps,
  so a checkpoint may be overshot by up to num_workers - 1 steps (the actual step is recorded);
- a checkpoint is taken between vector steps (no env step in flight); on resume every env
  starts a fresh episode and the n-step starts pending at the save are dropped and counted.
- every wait for the envs gives up after `worker_timeout_s` (transport.vector_envs.SupervisedEnvs),
  and a dead env process is named at once: the run fails with one line naming the env, as the
  other designs' supervision does, where gymnasium alone would wait forever for a hung env.

Run it without Sacred:  python -m architectures vector_env --num_workers 2 --total_env_steps 20000
"""

from __future__ import annotations

import functools
import time

import numpy as np
import torch

from architectures.core.config import DQNConfig
from architectures.core.diagnostics import name_bottleneck
from architectures.core.dqn import build_learner
from architectures.core.envs import EnvSpec, make_env, rng_seeds
from architectures.core.metrics import NullReporter, Reporter
from architectures.core.networks import GreedyPolicy
from architectures.core.replay import make_replay
from architectures.core.schedules import EpsilonSchedule
from architectures.run.acting import EpisodeStats, EpisodeStream, worker_env_cost
from architectures.run.base import Run
from architectures.run.learning import ReplayLearning
from architectures.run.worker_rows import per_worker_summary
from architectures.transport import janitor
from architectures.transport.vector_envs import SupervisedEnvs
from architectures.transport.workers import warn_if_oversubscribed

TIMES = ("act", "env_wait", "round_trip", "env_reset", "replay_add")


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    warn_if_oversubscribed(cfg.num_workers, "env processes plus the acting/learning process")
    torch.set_num_threads(cfg.learner_thread_count)
    # AsyncVectorEnv's shared memory comes from multiprocessing's heap, which falls back from
    # /dev/shm to the temp dir by itself when /dev/shm is short: nothing to check here. Its
    # semaphores are named in /dev/shm, though: the janitor unlinks them after a group kill.
    janitor.install()
    factories = [functools.partial(make_env, cfg.env_id, worker_env_cost(cfg, i), cfg.env_step_wait_us,
                                   cfg.max_episode_steps) for i in range(cfg.num_workers)]
    envs = SupervisedEnvs(factories, cfg.env_id, cfg.worker_timeout_s)
    try:
        return _train(cfg, reporter, envs)
    finally:
        envs.close(terminate=True)


def _train(cfg: DQNConfig, reporter: Reporter, envs: SupervisedEnvs) -> dict:
    # ------------------------------------------------------------------ setup
    n, space = cfg.num_workers, envs.single_observation_space
    learner = build_learner(EnvSpec(space.shape, space.dtype, int(envs.single_action_space.n)), cfg)
    replay = make_replay(cfg, space.shape, space.dtype)
    streams = [EpisodeStream(cfg, i) for i in range(n)]  # seeds, n-step adder, episode totals per env
    epsilon = EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps)
    run = Run("vector_env", cfg, reporter, learner.online)
    learning = ReplayLearning(run, learner, replay, sources=n)
    policy = GreedyPolicy(learning.acting.net, np.random.default_rng(rng_seeds(cfg.seed)[0]))  # on the CPU
    seconds, env_steps, vector_steps = dict.fromkeys(TIMES, 0.0), 0, 0
    resumed = run.resume()
    if resumed is not None:  # every env starts a fresh episode with the seed its stream was on
        saved = resumed.extras
        dropped = sum(s.restore(state) for s, state in zip(streams, saved["streams"]))
        policy.rng.bit_generator.state = saved["policy_rng"]
        env_steps, vector_steps, seconds = resumed.env_steps, saved["vector_steps"], saved["seconds"]
        envs.vector_steps = vector_steps
        run.resumed_with(dropped=dropped, epsilons=[epsilon(env_steps)] * n)
    obs, _ = envs.reset(seed=[s.episode_seed for s in streams])  # (N, *obs)
    perf = time.perf_counter
    run.start_clock(workers=lambda: [p.pid for p in envs.processes])
    while env_steps < cfg.total_env_steps:
        # ------------------------------------------------------------------ acting
        t0 = perf()
        actions = policy.act_batch(obs, epsilon(env_steps))  # (N,)
        t1 = perf()
        envs.step_async(actions)
        learning.learn_owed(env_steps)  # overlaps the envs' stepping; owed for the transitions already stored
        t2 = perf()
        next_obs, rewards, terminated, truncated, _ = envs.step_wait()  # (N, *obs), (N,) x3
        t3 = perf()
        env_steps += n
        vector_steps += 1
        # ------------------------------------------------------------------ hand-off into replay
        for i, stream in enumerate(streams):
            for transition in stream.record(obs[i], int(actions[i]), rewards[i], next_obs[i], terminated[i],
                                            truncated[i], learner.version):
                replay.add(transition)
        t4 = perf()
        done = terminated | truncated  # (N,)
        if done.any():
            envs.reset_async(seed=[s.episode_seed if d else None for s, d in zip(streams, done)],
                             options={"reset_mask": done})
            reset_obs, _ = envs.reset_wait()
            next_obs[done] = reset_obs[done]
            seconds["env_reset"] += perf() - t4
        obs = next_obs
        seconds["act"] += t1 - t0
        seconds["env_wait"] += t3 - t2
        seconds["round_trip"] += t3 - t1
        seconds["replay_add"] += t4 - t3

        # ------------------------------------------------------------------ syncing
        # Nothing to do: the policy acts through numpy views of the learner's own weights (a CUDA
        # learner's host copy: `learning` refreshes it every weight_sync_period updates).

        # ------------------------------------------------------------------ logging / evaluation
        episodes = sum((s.stats for s in streams), EpisodeStats())
        run.log(env_steps, episodes)
        if run.evaluation_due(env_steps):
            learning.learn_owed(env_steps)  # catch up first: evaluate at the same update count single_env would
            run.evaluate(env_steps)

        # ------------------------------------------------------------------ checkpointing (between vector steps)
        if run.save_due(env_steps):
            run.save(env_steps, {"streams": [s.state() for s in streams], "vector_steps": vector_steps,
                                    "policy_rng": policy.rng.bit_generator.state, "seconds": dict(seconds)})

    run.end_clock()  # closing the envs is not training
    resets = sum(s.stats.episodes for s in streams)
    result = run.result(
        env_steps=env_steps, episodes=episodes, num_workers=n,
        components={"act": (seconds["act"], vector_steps), "env_wait": (seconds["env_wait"], vector_steps),
                    "env_reset": (seconds["env_reset"], resets), "replay_add": (seconds["replay_add"], env_steps)},
        policy_lag=learning.lag.summary(),
        **per_worker_summary(_stream_status(streams), replay.data["source"][:replay.size], learning.sampled_counts))
    main_parts = {"act": seconds["act"], "replay_add": seconds["replay_add"] + seconds["env_reset"],
                  "sample": learning.sample_s, "update": learning.update_s, "wait": seconds["env_wait"]}
    # Env-side busy time is bounded above by the step round trip (it includes the IPC).
    env_parts = {"env_step_round_trip": seconds["round_trip"],
                 "wait": result["train_seconds"] - seconds["round_trip"]}
    result["bottleneck"] = name_bottleneck(result["train_seconds"], {"learner": main_parts, "envs": env_parts},
                                           result.get("cpu"))
    return result


def _stream_status(streams: list[EpisodeStream]) -> np.ndarray:
    """Per-env counters in the layout per_worker_summary reads."""
    rows = np.zeros(len(streams), dtype=[("env_steps", np.int64), ("episodes", np.int64),
                                         ("episode_length_sum", np.int64), ("episode_return_sum", np.float64)])
    for row, s in zip(rows, streams):
        row["env_steps"], row["episodes"] = s.steps, s.stats.episodes
        row["episode_length_sum"], row["episode_return_sum"] = s.stats.length_sum, s.stats.return_sum
    return rows
