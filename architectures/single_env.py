"""single_env: the baseline. One process, one env, act -> step -> store -> update, in turn.

Reads top to bottom in the order every architecture file keeps: setup, acting, learning,
syncing, logging/evaluation, checkpointing. The mechanics live in architectures/loop.py
(`EnvLoop` steps the env, `LearnerLoop` drives the learner); what is left here is the data
flow, and here nothing is parallel, so "syncing" is free: the policy acts with numpy views of
the learner's own weights, which see every update in place.

Checkpoints fall on episode ends (nothing pending in the env or the n-step adder), so a
resumed run ends bit for bit as an uninterrupted one (tests/test_resume.py).

Run it without Sacred:  python -m architectures.single_env --total_env_steps 20000
"""

from __future__ import annotations

import numpy as np
import torch

from architectures.config import DQNConfig
from architectures.dqn import DQNLearner, EpsilonSchedule
from architectures.envs import env_spec
from architectures.loop import EnvLoop, LearnerLoop, rng_seeds
from architectures.metrics import NullReporter, Reporter
from architectures.networks import GreedyPolicy, build_q_network
from architectures.replay import make_replay


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    # ------------------------------------------------------------------ setup
    torch.set_num_threads(cfg.learner_thread_count)
    spec = env_spec(cfg.env_id)
    learner = DQNLearner(build_q_network(spec.obs_shape, spec.num_actions, cfg.hidden_sizes, cfg.layer_norm,
                                         cfg.seed), cfg)
    replay = make_replay(cfg, spec.obs_shape, spec.obs_dtype)  # uniform, or prioritized
    driver = LearnerLoop("single_env", cfg, reporter, learner, replay)
    policy = GreedyPolicy(learner.online, np.random.default_rng(rng_seeds(cfg)[0]))
    actor = EnvLoop(cfg, 0, policy, EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps))
    saved = driver.resume()  # None, or the state at the end of step saved["env_steps"]
    if saved is not None:
        actor.restore(saved["actor"])
        driver.epsilon_at_resume = [actor.epsilon(actor.steps)]
    driver.start_clock()
    for env_steps in range(driver.resumed_from_env_steps + 1, cfg.total_env_steps + 1):
        # ------------------------------------------------------------------ acting
        actor.step(learner.version, replay.add)

        # ------------------------------------------------------------------ learning
        driver.learn_owed(env_steps)

        # ------------------------------------------------------------------ syncing
        # Nothing to do: `policy` reads the learner's parameters through shared numpy views.

        # ------------------------------------------------------------------ logging / evaluation
        driver.log(env_steps, actor.stats)
        driver.maybe_evaluate(env_steps)

        # ------------------------------------------------------------------ checkpointing
        if actor.ended and driver.save_due(env_steps):  # on an episode end: nothing in flight
            driver.save(env_steps, {"actor": actor.state()})

    driver.end_clock()  # closing the env is not training
    actor.close()
    steps = cfg.total_env_steps
    return driver.result(env_steps=steps, episodes=actor.stats, components={
        "act": (actor.act_s, steps), "env_step": (actor.env_s, steps), "replay_add": (actor.fold_s, steps)})


if __name__ == "__main__":
    from architectures.cli import main

    main("single_env")
