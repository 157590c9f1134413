"""single_env: the baseline. One process, one env, act -> step -> store -> update, in turn.

Reads top to bottom in the order every design file keeps: setup, acting, learning, syncing,
logging/evaluation, checkpointing. The mechanics live in architectures/run/ (`EnvLoop` steps the
env, `ReplayLearning` learns from the replay, `Run` keeps the clock, log, evaluation and
checkpoints); what is left here is the data flow, and here nothing is parallel, so "syncing" is
free: the policy acts with numpy views of the learner's own weights, which see every update in
place (with `device=cuda`, the learner's weights live on the GPU and the policy acts on a host
copy refreshed every `weight_sync_period` updates: run/learning.py).

Checkpoints fall on episode ends (nothing pending in the env or the n-step adder), so a
resumed run ends bit for bit as an uninterrupted one (tests/test_resume.py).

Run it without Sacred:  python -m architectures single_env --total_env_steps 20000
"""

from __future__ import annotations

import numpy as np
import torch

from architectures.core.config import DQNConfig
from architectures.core.dqn import build_learner
from architectures.core.envs import env_spec, rng_seeds
from architectures.core.metrics import NullReporter, Reporter
from architectures.core.networks import GreedyPolicy
from architectures.core.replay import make_replay
from architectures.core.schedules import EpsilonSchedule
from architectures.run.acting import EnvLoop
from architectures.run.base import Run
from architectures.run.learning import ReplayLearning
from architectures.run.parts import StreamPart


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    # ------------------------------------------------------------------ setup
    torch.set_num_threads(cfg.learner_thread_count)
    spec = env_spec(cfg.env_id)
    learner = build_learner(spec, cfg)
    replay = make_replay(cfg, spec.obs_shape, spec.obs_dtype)  # uniform, or prioritized
    run = Run("single_env", cfg, reporter, learner.online)
    learning = ReplayLearning(run, learner, replay)
    policy = GreedyPolicy(learning.acting.net, np.random.default_rng(rng_seeds(cfg.seed)[0]))  # on the CPU
    actor = EnvLoop(cfg, 0, policy, EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps))
    run.attach("actor", StreamPart(actor))
    run.resume()  # every part as it was at the end of env step run.resumed_from_env_steps, if a checkpoint exists
    run.start_clock()
    for env_steps in range(run.resumed_from_env_steps + 1, cfg.total_env_steps + 1):
        # ------------------------------------------------------------------ acting
        actor.step(learner.version, replay.add)

        # ------------------------------------------------------------------ learning
        learning.learn_owed(env_steps)

        # ------------------------------------------------------------------ syncing
        # Nothing to do: `policy` reads the learner's parameters through shared numpy views (a CUDA
        # learner's host copy: `learning` refreshes it every weight_sync_period updates).

        # ------------------------------------------------------------------ logging / evaluation
        run.log(env_steps, actor.stats)
        run.maybe_evaluate(env_steps)

        # ------------------------------------------------------------------ checkpointing
        if actor.ended and run.save_due(env_steps):  # on an episode end: nothing in flight
            run.save(env_steps)

    run.end_clock()  # closing the env is not training
    actor.close()
    steps = cfg.total_env_steps
    return run.result(env_steps=steps, episodes=actor.stats, components={
        "act": (actor.act_s, steps), "env_step": (actor.env_s, steps), "replay_add": (actor.fold_s, steps)})
