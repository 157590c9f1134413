"""high_utd: one env, many gradient updates per env step, with the known mitigations, watched.

single_env's loop (diff the two files: what differs is the reset and divergence hooks) run at a
high update-to-data ratio (DER, van Hasselt et al. 2019; SR-SPR, D'Oro et al. 2023), with the
mitigations as independent switches:
- LayerNorm in the Q-network (`layer_norm`);
- periodic resets of the output layer or the whole network, online and target, with their
  Adam moments, every `reset_period` updates (`reset_layers`; Nikishin et al. 2022);
- a longer target period (`target_update_period`) and n-step returns (`n_step`).
Instability is detected, not just suffered: at every log the largest |Q| of the latest batch is
compared with the return scale max|r| / (1 - gamma) seen so far, and the gradient norm before
clipping is logged; `diverged` is set when |Q| exceeds DIVERGENCE_FACTOR x that scale (a loss
that is not finite stops the run at once, as in every design: run.learning.ReplayLearning.learn_owed).
With `utd` at the baseline's and no mitigation, this file reproduces single_env bit for bit
(tests/test_high_utd.py), and like single_env it resumes bit for bit (tests/test_resume.py).

Run it without Sacred:  python -m architectures high_utd --utd 4 --layer_norm true --reset_period 2000
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch

from architectures.core.config import DQNConfig
from architectures.core.device import host_float
from architectures.core.dqn import build_learner
from architectures.core.envs import env_spec, rng_seeds
from architectures.core.errors import RunWarning
from architectures.core.metrics import NullReporter, Reporter
from architectures.core.networks import GreedyPolicy
from architectures.core.replay import make_replay
from architectures.core.schedules import EpsilonSchedule
from architectures.run.acting import EnvLoop
from architectures.run.base import Run
from architectures.run.learning import ReplayLearning
from architectures.run.parts import StreamPart

DIVERGENCE_FACTOR = 10.0
"""|Q| above this many times the return scale max|r| / (1 - gamma) counts as divergence."""
UNMITIGATED_UTD_LIMIT = 4.0
"""Above this utd without LayerNorm or resets, the run warns that it is likely to diverge."""


def check_settings(cfg: DQNConfig) -> None:
    if cfg.utd > UNMITIGATED_UTD_LIMIT and not cfg.layer_norm and cfg.reset_period == 0:
        warnings.warn(f"utd={cfg.utd:g} without layer_norm or reset_period: value estimates often diverge above "
                      f"utd {UNMITIGATED_UTD_LIMIT:g} without a mitigation", RunWarning, stacklevel=3)


def _grad_norm(net: torch.nn.Module) -> torch.Tensor:
    grads = [p.grad for p in net.parameters() if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))) if grads else torch.zeros(())


class DivergenceWatch:
    """The divergence hook: at each log with fresh updates, the latest batch's largest |Q| and
    gradient norm (before clipping) against the return scale max|r| / (1 - gamma) seen so far.
    A run part: its state is saved and restored with the run."""

    def __init__(self, cfg: DQNConfig):
        self.gamma = cfg.gamma
        self.max_abs_q, self.max_grad_norm, self.diverged_at, self.return_scale = 0.0, 0.0, None, 0.0
        self.checked_at_update = 0  # the learner's update count at the last check

    def check(self, env_steps: int, learner, max_abs_reward: float) -> dict[str, float]:
        if learner.version == self.checked_at_update:  # no update since the last log
            return {}
        self.checked_at_update = learner.version
        q_abs = host_float(learner.last_q_taken.abs().max())
        grad_norm = host_float(learner.last_grad_norm if learner.last_grad_norm is not None else _grad_norm(learner.online))
        # A plain max() drops a NaN (every comparison with it is false): NaN ranks above all here.
        self.max_abs_q = max(self.max_abs_q, q_abs, key=lambda v: (math.isnan(v), v))
        self.max_grad_norm = max(self.max_grad_norm, grad_norm)
        self.return_scale = max_abs_reward / max(1e-8, 1.0 - self.gamma)
        # A non-finite loss never gets here: ReplayLearning.learn_owed stops the run at its update.
        if self.diverged_at is None and q_abs > DIVERGENCE_FACTOR * self.return_scale:
            self.diverged_at = env_steps
        return {"q_max_abs": q_abs, "grad_norm": grad_norm}

    def save(self) -> dict:
        return dict(vars(self))

    def restore(self, state: dict) -> None:
        vars(self).update(state)

    def result(self, max_abs_reward: float) -> dict:
        return {"diverged": self.diverged_at is not None, "diverged_at_env_steps": self.diverged_at,
                "max_abs_q": self.max_abs_q, "return_scale": max_abs_reward / max(1e-8, 1.0 - self.gamma),
                "max_grad_norm_before_clip": self.max_grad_norm}


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    check_settings(cfg)
    # ------------------------------------------------------------------ setup
    torch.set_num_threads(cfg.learner_thread_count)
    spec = env_spec(cfg.env_id)
    learner = build_learner(spec, cfg)
    replay = make_replay(cfg, spec.obs_shape, spec.obs_dtype)  # uniform, or prioritized
    def reset_hook() -> None:  # primacy-bias resets on their period, seeded by the reset count
        if cfg.reset_period and learner.version % cfg.reset_period == 0:
            learner.reset_parameters(cfg.reset_layers, seed=cfg.seed * 1_000_003 + learner.resets)

    run = Run("high_utd", cfg, reporter, learner.online)
    learning = ReplayLearning(run, learner, replay, after_update=reset_hook)
    watch = run.attach("watch", DivergenceWatch(cfg))
    policy = GreedyPolicy(learning.acting.net, np.random.default_rng(rng_seeds(cfg.seed)[0]))  # on the CPU
    actor = EnvLoop(cfg, 0, policy, EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps))
    run.attach("actor", StreamPart(actor))
    run.resume()  # every part as it was at the end of env step run.resumed_from_env_steps, if a checkpoint exists
    run.start_clock()
    for env_steps in range(run.resumed_from_env_steps + 1, cfg.total_env_steps + 1):
        # ------------------------------------------------------------------ acting
        actor.step(learner.version, replay.add)

        # ------------------------------------------------------------------ learning: many updates, resets
        learning.learn_owed(env_steps)

        # ------------------------------------------------------------------ syncing
        # Nothing to do: `policy` reads the learner's parameters through shared numpy views (a CUDA
        # learner's host copy: `learning` refreshes it every weight_sync_period updates).

        # ------------------------------------------------------------------ logging / evaluation
        if run.log_due(env_steps):
            run.log(env_steps, actor.stats, **watch.check(env_steps, learner, actor.max_abs_reward))
        run.maybe_evaluate(env_steps)

        # ------------------------------------------------------------------ checkpointing
        if actor.ended and run.save_due(env_steps):  # on an episode end: nothing in flight
            run.save(env_steps)

    run.end_clock()  # closing the env is not training
    actor.close()
    steps = cfg.total_env_steps
    return run.result(env_steps=steps, episodes=actor.stats, components={
        "act": (actor.act_s, steps), "env_step": (actor.env_s, steps), "replay_add": (actor.fold_s, steps)},
        resets=learner.resets, **watch.result(actor.max_abs_reward),
        mitigations={"layer_norm": cfg.layer_norm, "reset_period": cfg.reset_period, "reset_layers": cfg.reset_layers,
                     "target_update_period": cfg.target_update_period, "n_step": cfg.n_step})
