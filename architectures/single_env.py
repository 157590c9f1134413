"""single_env: the baseline. One process, one env, act -> step -> store -> update, in turn.

Reads top to bottom in the order every architecture file keeps: setup, acting, learning,
syncing, logging/evaluation. Here nothing is parallel, so "syncing" is free: the policy acts
with numpy views of the learner's own weights, which see every update in place.

Run it without Sacred:  python -m architectures.single_env --total_env_steps 20000
"""

from __future__ import annotations

import time

import numpy as np
import torch

from architectures.checkpoint import load_checkpoint, remove_checkpoint, save_checkpoint
from architectures.config import DQNConfig
from architectures.dqn import DQNLearner, EpsilonSchedule, UpdateRatio
from architectures.envs import make_env, training_episode_seeds
from architectures.evaluation import HoldoutEvaluator
from architectures.metrics import NullReporter, Reporter, Stopwatch, Timers
from architectures.networks import GreedyPolicy, build_q_network
from architectures.replay import NStepAdder, make_replay
from architectures.results import run_result


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    # ------------------------------------------------------------------ setup
    torch.set_num_threads(cfg.torch_threads)
    act_seed, replay_seed = np.random.SeedSequence(cfg.seed).spawn(2)
    env = make_env(cfg.env_id, cfg.env_step_cost_us)
    episode_seeds = training_episode_seeds(cfg.seed, env_index=0)
    obs_shape, num_actions = env.observation_space.shape, int(env.action_space.n)
    learner = DQNLearner(build_q_network(obs_shape, num_actions, cfg.hidden_sizes, cfg.layer_norm, cfg.seed), cfg)
    policy = GreedyPolicy(learner.online, np.random.default_rng(act_seed))
    replay = make_replay(cfg, obs_shape, env.observation_space.dtype)  # uniform, or prioritized
    replay_rng = np.random.default_rng(replay_seed)
    adder = NStepAdder(cfg.n_step, cfg.gamma, source=0)
    epsilon = EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps)
    ratio = UpdateRatio(cfg.utd, cfg.learning_starts)
    evaluator = HoldoutEvaluator(cfg, learner.online)
    timers, clock = Timers(), Stopwatch()
    act_s = env_s = add_s = sample_s = update_s = 0.0  # hot-loop timers, folded into `timers` at the end
    loss_sum = 0.0
    logged_updates = episodes = logged_episodes = length_sum = logged_length_sum = 0
    return_sum = logged_return_sum = 0.0
    episode_return, episode_length = 0.0, 0
    last_holdout: float | None = None
    perf = time.perf_counter
    start_step, next_checkpoint, episode_ended = 0, cfg.checkpoint_every, False

    saved = load_checkpoint(cfg.checkpoint_path)
    if saved is None:
        episode_seed = next(episode_seeds)
    else:  # resume: everything the loop reads, as it was at the end of step `env_steps`
        learner.load_state_dict(saved["learner"])
        learner.last_q_taken = saved["last_q_taken"]
        if saved["replay"] is not None:
            replay.load_state_dict(saved["replay"])
        policy.rng.bit_generator.state = saved["policy_rng"]
        replay_rng.bit_generator.state = saved["replay_rng"]
        episode_seeds.state, episode_seed = saved["episode_seeds"], saved["episode_seed"]
        evaluator.results = saved["holdout"]
        for result in evaluator.results:
            reporter.holdout(result)
        last_holdout = evaluator.results[-1]["return_mean"] if evaluator.results else None
        (loss_sum, logged_updates, episodes, logged_episodes, length_sum, logged_length_sum, return_sum,
         logged_return_sum, act_s, env_s, add_s, sample_s, update_s) = saved["tally"]
        start_step = saved["env_steps"]
        next_checkpoint = start_step + cfg.checkpoint_every
        clock = Stopwatch(already=saved["train_seconds"])
    obs, _ = env.reset(seed=episode_seed)
    for env_steps in range(start_step + 1, cfg.total_env_steps + 1):
        # ------------------------------------------------------------------ acting
        t0 = perf()
        action = policy.act(obs, epsilon(env_steps - 1))
        t1 = perf()
        next_obs, reward, terminated, truncated, _ = env.step(action)
        t2 = perf()
        for transition in adder.step(obs, action, reward, next_obs, terminated, truncated, learner.version):
            replay.add(transition)
        episode_return += float(reward)
        episode_length += 1
        t3 = perf()
        if terminated or truncated:
            episodes += 1
            return_sum += episode_return
            length_sum += episode_length
            episode_seed = next(episode_seeds)
            obs, _ = env.reset(seed=episode_seed)
            episode_return, episode_length = 0.0, 0
            episode_ended = True
            env_s += perf() - t3  # a reset is env work too
        else:
            obs = next_obs
        act_s += t1 - t0
        env_s += t2 - t1
        add_s += t3 - t2

        # ------------------------------------------------------------------ learning
        owed = ratio.target_updates(env_steps) - learner.version
        while owed > 0 and replay.size > 0:
            t4 = perf()
            batch = replay.sample(cfg.batch_size, replay_rng)
            t5 = perf()
            loss = learner.update(batch)  # also syncs the target on its period
            if cfg.prioritized:
                replay.update_priorities(batch["indices"], learner.last_td_abs.cpu().numpy())
            t6 = perf()
            sample_s += t5 - t4
            update_s += t6 - t5
            loss_sum += loss
            owed -= 1

        # ------------------------------------------------------------------ syncing
        # Nothing to do: `policy` reads the learner's parameters through shared numpy views.

        # ------------------------------------------------------------------ logging / evaluation
        if env_steps % cfg.log_every == 0:
            steps_per_sec = env_steps / clock.elapsed()
            reporter.scalar("env_steps_per_sec", steps_per_sec, env_steps)
            fresh = learner.version - logged_updates
            if fresh:
                reporter.scalar("td_loss", loss_sum / fresh, env_steps)  # mean since the last log
                reporter.scalar("q_mean", float(learner.last_q_taken.mean()), env_steps)  # latest batch
                loss_sum = 0.0
                logged_updates = learner.version
            if episodes > logged_episodes:  # means over the episodes finished since the last log
                finished = episodes - logged_episodes
                reporter.scalar("train_episode_return", (return_sum - logged_return_sum) / finished, env_steps)
                reporter.scalar("train_episode_length", (length_sum - logged_length_sum) / finished, env_steps)
                logged_episodes, logged_return_sum, logged_length_sum = episodes, return_sum, length_sum
            reporter.progress(env_steps, cfg.total_env_steps, steps_per_sec, last_holdout)
        if evaluator.due(env_steps):
            result = evaluator.evaluate_off_clock(env_steps, clock, timers)
            last_holdout = result["return_mean"]
            reporter.holdout(result)

        # ------------------------------------------------------------------ checkpointing
        if episode_ended:
            episode_ended = False  # checkpoints fall on episode ends: nothing in flight in the env or adder
            if cfg.checkpoint_every and env_steps >= next_checkpoint and env_steps < cfg.total_env_steps:
                next_checkpoint = env_steps + cfg.checkpoint_every
                clock.pause()
                t8 = perf()
                save_checkpoint(cfg.checkpoint_path, {
                    "env_steps": env_steps, "train_seconds": clock.elapsed(), "learner": learner.state_dict(),
                    "last_q_taken": learner.last_q_taken,
                    "replay": replay.state_dict() if cfg.checkpoint_replay else None,
                    "policy_rng": policy.rng.bit_generator.state, "replay_rng": replay_rng.bit_generator.state,
                    "episode_seeds": episode_seeds.state, "episode_seed": episode_seed,
                    "holdout": evaluator.results,
                    "tally": (loss_sum, logged_updates, episodes, logged_episodes, length_sum, logged_length_sum,
                              return_sum, logged_return_sum, act_s, env_s, add_s, sample_s, update_s)})
                timers.add("checkpoint", perf() - t8)
                clock.resume()

    train_seconds = clock.elapsed()
    steps = cfg.total_env_steps
    for name, seconds, calls in (("act", act_s, steps), ("env_step", env_s, steps), ("replay_add", add_s, steps),
                                 ("sample", sample_s, learner.version), ("update", update_s, learner.version)):
        timers.add(name, seconds, calls)
    env.close()
    evaluator.close()
    remove_checkpoint(cfg.checkpoint_path)  # finished: a rerun starts afresh
    return run_result(cfg, env_steps=cfg.total_env_steps, updates=learner.version, episodes=episodes,
                      train_seconds=train_seconds, ratio=ratio, timers=timers, evaluator=evaluator,
                      resumed_from_env_steps=start_step)


if __name__ == "__main__":
    from architectures.cli import main

    main(train)
