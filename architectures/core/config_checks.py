"""The ranges every DQNConfig value must lie in, checked when a config is made (DQNConfig's
__post_init__), so a bad value stops a run with one line before any work
(tests/test_config.py, tests/test_config_limits.py)."""

from __future__ import annotations

import functools
import math
import re
import typing

from architectures.core.errors import ConfigError

UPPER_BOUNDS: dict[str, tuple[float, str]] = {
    "seed": (2**32 - 1, "Sacred seeds numpy's global RNG with it, and np.random.seed takes [0, 2**32 - 1]"),
    "utd": (256, "updates per env step: 256 x ~0.6 ms is already ~0.15 s of updates per env step"),
    "n_step": (1_000, "steps folded into one return; longer is a Monte Carlo return"),
    "eval_episodes": (1_000, "holdout episodes at every checkpoint: 1,000 are up to 500k CartPole steps each time"),
    "env_step_cost_us": (1e6, "1 s of busy CPU per env step"),
    "slow_worker_cost_us": (1e6, "1 s of busy CPU per env step"),
    "env_step_wait_us": (1e6, "1 s of waiting per env step"),
}
"""Values above these run but mean nothing, or never finish (tests/test_config_limits.py). The
machine's own limits (cores, memory, CUDA, an env's episode cap) are architectures/core/limits.py's."""


@functools.cache
def literals(cls: type) -> dict[str, tuple]:
    """A config class's `Literal` keys and their declared values, read from the annotations once."""
    return {key: typing.get_args(annotation) for key, annotation in typing.get_type_hints(cls).items()
            if typing.get_origin(annotation) is typing.Literal}


def validate(c) -> None:
    """Raise a one-line ConfigError naming the first key of DQNConfig `c` out of its range."""
    def need(ok: bool, key: str, valid: str) -> None:
        if not ok:
            raise ConfigError(f"{key}: must be {valid} (got {getattr(c, key)!r})")

    for key in ("total_env_steps", "buffer_size", "batch_size", "n_step", "target_update_period",
                "eval_every", "torch_threads", "num_workers", "log_every", "weight_sync_period", "rollout_steps",
                "rollout_epochs", "rollout_minibatches", "ray_batch_steps", "ray_requests_in_flight"):
        value = getattr(c, key)
        need(isinstance(value, int) and not isinstance(value, bool) and value >= 1, key, "an integer >= 1")
    for key in ("learning_starts", "eps_decay_steps", "eval_episodes", "seed", "max_episode_steps", "utd_slack_steps",
                "checkpoint_every", "actor_restarts",
                "reset_period", "learner_threads"):
        value = getattr(c, key)
        need(isinstance(value, int) and not isinstance(value, bool) and value >= 0, key, "an integer >= 0")
    need(c.actor_restarts == 0 or c.backend == "ray", "actor_restarts",
         "0 unless backend='ray': only Ray actors are replaced (a lost host costs its actors); on one machine a "
         "dead actor is the env's or the code's fault, which a replacement would repeat, so the run fails naming it")
    need(c.batch_size <= c.buffer_size, "batch_size", f"<= buffer_size ({c.buffer_size:,}): a batch samples the replay")
    need(c.learning_starts <= c.total_env_steps, "learning_starts",
         f"<= total_env_steps ({c.total_env_steps})")
    need(len(c.hidden_sizes) >= 1 and all(h >= 1 for h in c.hidden_sizes), "hidden_sizes",
         "a non-empty list of integers >= 1")
    for key in ("lr", "adam_eps"):
        need(math.isfinite(getattr(c, key)) and getattr(c, key) > 0, key, "a number > 0")
    need(0.0 <= c.gamma <= 1.0, "gamma", "in [0, 1]")
    need(math.isfinite(c.utd) and c.utd > 0, "utd", "a number > 0 (updates per env step)")
    need(0.0 < c.target_tau <= 1.0, "target_tau", "in (0, 1]")
    need(math.isfinite(c.max_grad_norm) and c.max_grad_norm >= 0, "max_grad_norm", "a number >= 0 (0 disables)")
    for key in ("eps_start", "eps_end", "eval_epsilon"):
        need(0.0 <= getattr(c, key) <= 1.0, key, "in [0, 1]")
    for key in ("env_step_cost_us", "slow_worker_cost_us", "env_step_wait_us"):
        need(math.isfinite(getattr(c, key)) and getattr(c, key) >= 0, key, "a number of microseconds >= 0")
    for key, values in literals(type(c)).items():
        need(getattr(c, key) in values, key, "one of " + ", ".join(repr(v) for v in values))
    for key, (bound, why) in UPPER_BOUNDS.items():
        need(getattr(c, key) <= bound, key, f"<= {int(bound):,} ({why})")
    need(isinstance(c.actor_nice, int) and 0 <= c.actor_nice <= 19, "actor_nice", "an integer in [0, 19]")
    need(c.checkpoint_every == 0 or bool(c.checkpoint_path), "checkpoint_every",
         "0 unless checkpoint_path names a file")
    if c.backend == "ray":
        import importlib.util

        try:
            missing = importlib.util.find_spec("ray") is None
        except (ImportError, ValueError):  # a broken or blocked install
            missing = True
        if missing:
            raise ConfigError("backend: 'ray' needs Ray, which is not installed: pip install -e '.[ray]'")
    need(math.isfinite(c.worker_timeout_s) and c.worker_timeout_s > 0, "worker_timeout_s", "a number of seconds > 0")
    step_s = (c.env_step_cost_us + c.slow_worker_cost_us + c.env_step_wait_us) / 1e6  # slower reads as hung
    need(step_s < c.worker_timeout_s, "worker_timeout_s", f"longer than an env step's added cost ({step_s:g} s)")
    need(c.rollout_minibatches <= c.rollout_steps * c.num_workers, "rollout_minibatches",
         f"<= rollout_steps x num_workers ({c.rollout_steps * c.num_workers:,}): a minibatch of no samples")
    for key in ("priority_alpha", "priority_beta", "q_lambda"):
        need(0.0 <= getattr(c, key) <= 1.0, key, "in [0, 1]")
    need(c.device in ("cpu", "meta") or re.fullmatch(r"cuda(:\d+)?", c.device) is not None, "device",
         "'cpu' or 'cuda[:N]'")
    need(isinstance(c.env_id, str) and bool(c.env_id), "env_id", "a gymnasium id")
