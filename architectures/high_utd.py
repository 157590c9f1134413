"""high_utd: one env, many gradient updates per env step, with the known mitigations, watched.

single_env's loop (diff the two files: what differs is the learning section) run at a high
update-to-data ratio (DER, van Hasselt et al. 2019; SR-SPR, D'Oro et al. 2023), with the
mitigations as independent switches:
- LayerNorm in the Q-network (`layer_norm`);
- periodic resets of the output layer or the whole network, online and target, with their
  Adam moments, every `reset_period` updates (`reset_layers`; Nikishin et al. 2022);
- a longer target period (`target_update_period`) and n-step returns (`n_step`).
Instability is detected, not just suffered: at every log the largest |Q| of the latest batch is
compared with the return scale max|r| / (1 - gamma) seen so far, and the gradient norm before
clipping is logged; `diverged` is set when |Q| exceeds DIVERGENCE_FACTOR x that scale or a loss
is not finite. With `utd` at the baseline's and no mitigation, this file reproduces single_env
bit for bit (tests/test_high_utd.py).

Run it without Sacred:  python -m architectures.high_utd --utd 4 --layer_norm true --reset_period 2000
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import torch

from architectures.config import DQNConfig
from architectures.dqn import DQNLearner, EpsilonSchedule, UpdateRatio
from architectures.envs import make_env, training_episode_seeds
from architectures.evaluation import HoldoutEvaluator
from architectures.metrics import NullReporter, Reporter, Stopwatch, Timers
from architectures.networks import GreedyPolicy, build_q_network
from architectures.replay import NStepAdder, make_replay
from architectures.results import run_result
from architectures.workers import warn_if_not_checkpointing

DIVERGENCE_FACTOR = 10.0
"""|Q| above this many times the return scale max|r| / (1 - gamma) counts as divergence."""
UNMITIGATED_UTD_LIMIT = 4.0
"""Above this utd without LayerNorm or resets, the run warns that it is likely to diverge."""


def check_settings(cfg: DQNConfig) -> None:
    if cfg.utd > UNMITIGATED_UTD_LIMIT and not cfg.layer_norm and cfg.reset_period == 0:
        warnings.warn(f"utd={cfg.utd:g} without layer_norm or reset_period: value estimates often diverge above "
                      f"utd {UNMITIGATED_UTD_LIMIT:g} without a mitigation", RuntimeWarning, stacklevel=3)


def _grad_norm(net: torch.nn.Module) -> torch.Tensor:
    grads = [p.grad for p in net.parameters() if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))) if grads else torch.zeros(())


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    check_settings(cfg)
    warn_if_not_checkpointing(cfg, "high_utd")
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
    max_abs_reward, max_abs_q, max_grad_norm_seen, diverged_at = 0.0, 0.0, 0.0, None

    obs, _ = env.reset(seed=next(episode_seeds))
    for env_steps in range(1, cfg.total_env_steps + 1):
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
        max_abs_reward = max(max_abs_reward, abs(float(reward)))
        t3 = perf()
        if terminated or truncated:
            episodes += 1
            return_sum += episode_return
            length_sum += episode_length
            obs, _ = env.reset(seed=next(episode_seeds))
            episode_return, episode_length = 0.0, 0
            env_s += perf() - t3  # a reset is env work too
        else:
            obs = next_obs
        act_s += t1 - t0
        env_s += t2 - t1
        add_s += t3 - t2

        # ------------------------------------------------------------------ learning: many updates, resets
        owed = ratio.target_updates(env_steps) - learner.version
        while owed > 0 and replay.size > 0:
            t4 = perf()
            batch = replay.sample(cfg.batch_size, replay_rng)
            t5 = perf()
            loss = learner.update(batch)  # also syncs the target on its period
            if cfg.prioritized:
                replay.update_priorities(batch["indices"], learner.last_td_abs.cpu().numpy())
            if cfg.reset_period and learner.version % cfg.reset_period == 0:
                learner.reset_parameters(cfg.reset_layers, seed=cfg.seed * 1_000_003 + learner.resets)
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
                q_abs = float(learner.last_q_taken.abs().max())
                max_abs_q = max(max_abs_q, q_abs)
                reporter.scalar("q_max_abs", q_abs, env_steps)
                grad_norm = float(learner.last_grad_norm if learner.last_grad_norm is not None
                                  else _grad_norm(learner.online))  # the latest update's, before clipping
                max_grad_norm_seen = max(max_grad_norm_seen, grad_norm)
                reporter.scalar("grad_norm", grad_norm, env_steps)
                scale = max_abs_reward / max(1e-8, 1.0 - cfg.gamma)
                if diverged_at is None and (q_abs > DIVERGENCE_FACTOR * scale or not math.isfinite(loss_sum)):
                    diverged_at = env_steps
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

    train_seconds = clock.elapsed()
    steps = cfg.total_env_steps
    for name, seconds, calls in (("act", act_s, steps), ("env_step", env_s, steps), ("replay_add", add_s, steps),
                                 ("sample", sample_s, learner.version), ("update", update_s, learner.version)):
        timers.add(name, seconds, calls)
    env.close()
    evaluator.close()
    return run_result(cfg, env_steps=cfg.total_env_steps, updates=learner.version, episodes=episodes,
                      train_seconds=train_seconds, ratio=ratio, timers=timers, evaluator=evaluator,
                      resets=learner.resets, diverged=diverged_at is not None, diverged_at_env_steps=diverged_at,
                      max_abs_q=max_abs_q, return_scale=max_abs_reward / max(1e-8, 1.0 - cfg.gamma),
                      max_grad_norm_before_clip=max_grad_norm_seen,
                      mitigations={"layer_norm": cfg.layer_norm, "reset_period": cfg.reset_period,
                                   "reset_layers": cfg.reset_layers, "target_update_period": cfg.target_update_period,
                                   "n_step": cfg.n_step})


if __name__ == "__main__":
    from architectures.cli import main

    main(train)
