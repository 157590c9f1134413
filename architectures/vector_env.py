"""vector_env: one process acts for `num_workers` envs at once; the envs step in subprocesses.

What many users pick today (SB3's SubprocVecEnv, CleanRL's envs): gymnasium's AsyncVectorEnv
with shared-memory observations. Same section order as single_env.py; what differs:
- acting is one batched forward pass for all envs (`GreedyPolicy.act_batch`);
- env stepping runs in the env subprocesses while this process does the learning it owes
  (step_async -> updates -> step_wait), so learning overlaps the simulator;
- episodes are reset by hand (autoreset disabled) so every env keeps the per-episode
  training seeds single_env uses;
- `utd` is updates per transition, as everywhere; a vector step adds `num_workers` env steps,
  so a checkpoint may be overshot by up to num_workers - 1 steps (the actual step is recorded).

Run it without Sacred:  python -m architectures.vector_env --num_workers 2 --total_env_steps 20000
"""

from __future__ import annotations

import functools
import time

import numpy as np
import torch
from gymnasium.vector import AsyncVectorEnv, AutoresetMode

from architectures.config import DQNConfig
from architectures.diagnostics import LearnerLog, PolicyLag, name_bottleneck, shares
from architectures.dqn import DQNLearner, EpsilonSchedule, UpdateRatio
from architectures.envs import make_env, training_episode_seeds
from architectures.evaluation import HoldoutEvaluator
from architectures.metrics import NullReporter, Reporter, Stopwatch, Timers
from architectures.networks import GreedyPolicy, build_q_network
from architectures.replay import NStepAdder, make_replay
from architectures.results import run_result
from architectures.workers import warn_if_not_checkpointing, warn_if_oversubscribed


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    warn_if_not_checkpointing(cfg, "vector_env")
    warn_if_oversubscribed(cfg.num_workers, "env processes plus the acting/learning process")
    # ------------------------------------------------------------------ setup
    torch.set_num_threads(cfg.torch_threads)
    n = cfg.num_workers
    act_seed, replay_seed = np.random.SeedSequence(cfg.seed).spawn(2)
    envs = AsyncVectorEnv([functools.partial(make_env, cfg.env_id, cfg.env_step_cost_us)] * n, shared_memory=True,
                          context="spawn", autoreset_mode=AutoresetMode.DISABLED)
    try:
        return _train(cfg, reporter, envs, n, act_seed, replay_seed)
    finally:
        envs.close(terminate=True)


def _train(cfg, reporter, envs, n, act_seed, replay_seed) -> dict:
    space = envs.single_observation_space
    obs_shape, num_actions = space.shape, int(envs.single_action_space.n)
    episode_seeds = [training_episode_seeds(cfg.seed, i) for i in range(n)]
    learner = DQNLearner(build_q_network(obs_shape, num_actions, cfg.hidden_sizes, cfg.layer_norm, cfg.seed), cfg)
    policy = GreedyPolicy(learner.online, np.random.default_rng(act_seed))
    replay = make_replay(cfg, obs_shape, space.dtype)
    replay_rng = np.random.default_rng(replay_seed)
    adders = [NStepAdder(cfg.n_step, cfg.gamma, source=i) for i in range(n)]
    epsilon = EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps)
    ratio = UpdateRatio(cfg.utd, cfg.learning_starts)
    evaluator = HoldoutEvaluator(cfg, learner.online)
    lag, sampled = PolicyLag(seed=cfg.seed), np.zeros(n, dtype=np.int64)
    episodes, lengths_sum, returns_sum = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n)
    episode_return, episode_length = np.zeros(n), np.zeros(n, np.int64)
    timers, perf = Timers(), time.perf_counter
    obs, _ = envs.reset(seed=[next(s) for s in episode_seeds])  # (N, *obs)
    clock = Stopwatch()
    act_s = env_wait_s = round_trip_s = reset_s = add_s = sample_s = update_s = 0.0
    log = LearnerLog(reporter, cfg.log_every)
    last_holdout, env_steps, vector_steps = None, 0, 0

    def learn(up_to_steps: int) -> None:
        # ------------------------------------------------------------------ learning
        nonlocal sample_s, update_s
        owed = ratio.target_updates(up_to_steps) - learner.version
        while owed > 0 and replay.size > 0:
            t0 = perf()
            batch = replay.sample(cfg.batch_size, replay_rng)
            lag.record(learner.version, batch["version"])
            sampled[:] += np.bincount(batch["source"], minlength=n)
            t1 = perf()
            log.loss_sum += learner.update(batch)
            if cfg.prioritized:
                replay.update_priorities(batch["indices"], learner.last_td_abs.cpu().numpy())
            update_s += perf() - t1
            sample_s += t1 - t0
            owed -= 1

    while env_steps < cfg.total_env_steps:
        # ------------------------------------------------------------------ acting
        t0 = perf()
        actions = policy.act_batch(obs, epsilon(env_steps))  # (N,)
        t1 = perf()
        envs.step_async(actions)
        learn(env_steps)  # overlaps the envs' stepping; owed for the transitions already stored
        t2 = perf()
        next_obs, rewards, terminated, truncated, _ = envs.step_wait()  # (N, *obs), (N,) x3
        t3 = perf()
        env_steps += n
        vector_steps += 1
        # ------------------------------------------------------------------ hand-off into replay
        for i in range(n):
            for transition in adders[i].step(obs[i], int(actions[i]), rewards[i], next_obs[i],
                                              terminated[i], truncated[i], learner.version):
                replay.add(transition)
        episode_return += rewards
        episode_length += 1
        t4 = perf()
        done = terminated | truncated  # (N,)
        if done.any():
            episodes[done] += 1
            lengths_sum[done] += episode_length[done]
            returns_sum[done] += episode_return[done]
            episode_return[done], episode_length[done] = 0.0, 0
            envs.reset_async(seed=[next(episode_seeds[i]) if done[i] else None for i in range(n)],
                             options={"reset_mask": done})
            reset_obs, _ = envs.reset_wait()
            next_obs[done] = reset_obs[done]
            reset_s += perf() - t4
        obs = next_obs
        act_s += t1 - t0
        env_wait_s += t3 - t2
        round_trip_s += t3 - t1
        add_s += t4 - t3

        # ------------------------------------------------------------------ syncing
        # Nothing to do: the policy acts through numpy views of the learner's own weights.

        # ------------------------------------------------------------------ logging / evaluation
        if log.due(env_steps):
            steps_per_sec = env_steps / clock.elapsed()
            log.write(env_steps, steps_per_sec, learner, lag, int(episodes.sum()), float(returns_sum.sum()))
            reporter.progress(env_steps, cfg.total_env_steps, steps_per_sec, last_holdout)
        if evaluator.due(env_steps):
            learn(env_steps)  # catch up first: evaluate at the same update count single_env would
            result = evaluator.evaluate_off_clock(env_steps, clock, timers)
            last_holdout = result["return_mean"]
            reporter.holdout(result)

    train_seconds = clock.elapsed()
    for name, seconds, calls in (("act", act_s, vector_steps), ("env_wait", env_wait_s, vector_steps),
                                 ("env_reset", reset_s, int(episodes.sum())), ("replay_add", add_s, env_steps),
                                 ("sample", sample_s, learner.version), ("update", update_s, learner.version)):
        timers.add(name, seconds, calls)
    main_parts = {"act": act_s, "replay_add": add_s + reset_s, "sample": sample_s, "update": update_s,
                  "wait": env_wait_s}
    env_parts = {"env_step_round_trip": round_trip_s, "wait": train_seconds - round_trip_s}
    evaluator.close()
    return run_result(
        cfg, env_steps=env_steps, updates=learner.version, episodes=int(episodes.sum()),
        train_seconds=train_seconds, ratio=ratio, timers=timers, evaluator=evaluator, num_workers=n,
        policy_lag=lag.summary(),
        worker_shares={"env_steps": [1.0 / n] * n, "replay": shares(replay.data["source"][:replay.size], n),
                       "sampled": (sampled / max(1, sampled.sum())).tolist()},
        worker_episodes=episodes.tolist(),
        worker_mean_episode_length=(lengths_sum / np.maximum(1, episodes)).tolist(),
        worker_mean_episode_return=(returns_sum / np.maximum(1, episodes)).tolist(),
        # Env-side busy time is bounded above by the step round trip (it includes the IPC).
        bottleneck=name_bottleneck(train_seconds, {"learner": main_parts, "envs": env_parts}),
    )


if __name__ == "__main__":
    from architectures.cli import main

    main(train)
