"""Acting: one env's stream of training episodes, the env-stepping loop, and epsilon per actor.

`EpisodeStream` keeps one env's episode-seed stream, n-step adder and episode statistics;
`EnvLoop` adds the env, the policy and its epsilon schedule, and `step(version)` acts, steps,
folds and resets, returning the transitions the step completed. Their `state()` is everything
the stream needs to go on (seed stream, the current episode's seed, policy RNG, own step count,
which is epsilon's position, statistics); `restore()` starts a fresh episode from it. vector_env
and pqn keep N `EpisodeStream`s beside their env processes; every other design acts with `EnvLoop`s.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from architectures.core.config import DQNConfig
from architectures.core.envs import make_env, training_episode_seeds
from architectures.core.errors import NonFiniteEnvValue
from architectures.core.networks import GreedyPolicy
from architectures.core.replay import NStepAdder, Transition
from architectures.core.schedules import EpsilonSchedule


def _finite(array: np.ndarray) -> bool:
    return bool(np.isfinite(array).all())


def worker_env_cost(cfg: DQNConfig, index: int) -> float:
    """Busy CPU added to env `index`'s steps: everyone's `env_step_cost_us`, and worker 0's
    `slow_worker_cost_us` on top when there are several workers (uneven workers)."""
    return cfg.env_step_cost_us + (cfg.slow_worker_cost_us if index == 0 and cfg.num_workers > 1 else 0.0)


@dataclass
class EpisodeStats:
    """Running totals over finished training episodes."""

    episodes: int = 0
    length_sum: int = 0
    return_sum: float = 0.0

    def __add__(self, other: "EpisodeStats") -> "EpisodeStats":
        return EpisodeStats(self.episodes + other.episodes, self.length_sum + other.length_sum,
                            self.return_sum + other.return_sum)


class EpisodeStream:
    """One env's stream of training episodes: reset seeds, the n-step adder, episode statistics."""

    def __init__(self, cfg: DQNConfig, index: int):
        self.env_id, self.index = cfg.env_id, index
        self.float_obs: bool | None = None  # known at the first step: whether observations can be non-finite
        self.seeds = training_episode_seeds(cfg.seed, index)
        self.adder = NStepAdder(cfg.n_step, cfg.gamma, source=index)
        self.stats = EpisodeStats()
        self.steps = 0  # this stream's env steps: epsilon's position for an actor
        self.episode_return, self.episode_length = 0.0, 0
        self.max_abs_reward = 0.0  # the return scale high_utd's divergence check reads
        self.episode_seed = next(self.seeds)  # the seed the current episode was reset with
        self._upcoming: int | None = None  # the next episode's seed, once peeked

    def record(self, obs, action: int, reward, next_obs, terminated, truncated, version: int) -> list[Transition]:
        """Count one env step; returns the transitions it completed. At an episode end the
        statistics take the episode and `episode_seed` becomes the next episode's."""
        self.steps += 1
        reward = float(reward)
        # The finite check is cheap enough for every step (a dot product of the observation with
        # itself; an overflow to inf is confirmed element-wise before it counts; its cost:
        # docs/design-notes.md#acting): a NaN or inf never enters the replay. Integer and boolean
        # observations (MinAtar's) cannot be non-finite.
        if self.float_obs is None:
            self.float_obs = next_obs.dtype.kind == "f"
        if self.float_obs:
            flat = next_obs.ravel()
            if not math.isfinite(flat.dot(flat)) and not _finite(flat) or self.episode_length == 0 and not _finite(obs):
                self.refuse(obs, reward)
        if not math.isfinite(reward):
            self.refuse(obs, reward)
        self.episode_return += reward
        self.episode_length += 1
        if abs(reward) > self.max_abs_reward:
            self.max_abs_reward = abs(reward)
        transitions = self.adder.step(obs, action, reward, next_obs, terminated, truncated, version)
        if terminated or truncated:
            stats = self.stats
            stats.episodes += 1
            stats.length_sum += self.episode_length
            stats.return_sum += self.episode_return
            self.episode_return, self.episode_length = 0.0, 0
            self.episode_seed, self._upcoming = next(self.seeds), None
        return transitions

    def upcoming_seed(self) -> int:
        """The seed the next episode will be reset with, the stream unmoved: an env in a process of
        its own resets as soon as its step ends an episode (transport/vector_envs.py)."""
        if self._upcoming is None:
            state = self.seeds.state
            self._upcoming = next(self.seeds)
            self.seeds.state = state
        return self._upcoming

    def refuse(self, obs: np.ndarray, reward: float) -> None:
        what = (f"reward ({reward})" if not math.isfinite(reward) else
                "observation" if self.episode_length or _finite(obs) else "observation at reset")
        raise NonFiniteEnvValue(f"env {self.env_id} (worker {self.index}) returned a non-finite {what} at its env "
                                f"step {self.steps:,}; nothing from that step entered the replay")

    def save(self) -> dict:
        return {"steps": self.steps, "seeds": self.seeds.state, "episode_seed": self.episode_seed,
                "stats": asdict(self.stats), "max_abs_reward": self.max_abs_reward,
                "pending": len(self.adder.pending)}

    def restore(self, state: dict) -> int:
        """Continue from `state` with a fresh episode reset with its `episode_seed`; returns the
        n-step starts that were pending at the save and are dropped (0 at an episode end)."""
        self.steps, self.seeds.state, self.episode_seed = state["steps"], state["seeds"], state["episode_seed"]
        self._upcoming = None
        self.stats = EpisodeStats(**state["stats"])
        self.max_abs_reward = state["max_abs_reward"]
        self.adder.reset()
        self.episode_return, self.episode_length = 0.0, 0
        return state["pending"]


class HeldObs:
    """The main process's copy of N env processes' observations (vector_env, pqn): `obs` (N, *obs)
    is each env's observation now, which batched acting reads; `take(envs, i)` reads env i's answer
    (transport.vector_envs.VectorEnvs) as (observation acted on, reward, next observation,
    terminated, truncated) and moves env i on, to the reset observation at an episode end. Every
    observation handed out is a copy of its own: an n-step adder keeps them while the env's shared
    slots are rewritten."""

    def __init__(self, first: np.ndarray):
        self.obs = first  # (N, *obs)
        self.held = [row.copy() for row in first]

    def take(self, envs, i: int) -> tuple:
        acted_on, next_obs = self.held[i], envs.next_obs[i].copy()
        terminated, truncated = bool(envs.terminated[i]), bool(envs.truncated[i])
        self.held[i] = envs.reset_obs[i].copy() if terminated or truncated else next_obs
        self.obs[i] = self.held[i]
        return acted_on, float(envs.reward[i]), next_obs, terminated, truncated


class EnvLoop(EpisodeStream):
    """The env-stepping object: one env, acted on by `policy` at `epsilon(own steps)`.

    `act_s`, `env_s` (resets included) and `fold_s` (the n-step adder, and `store` when given)
    accumulate the step's time by component, for the time breakdown."""

    def __init__(self, cfg: DQNConfig, index: int, policy: GreedyPolicy, epsilon: Callable[[int], float]):
        super().__init__(cfg, index)
        self.env = make_env(cfg.env_id, worker_env_cost(cfg, index), cfg.env_step_wait_us, cfg.max_episode_steps)
        self.policy, self.epsilon = policy, epsilon
        self.obs, _ = self.env.reset(seed=self.episode_seed)
        self.ended = False  # whether the last step ended an episode
        self.act_s = self.env_s = self.fold_s = 0.0

    def step(self, version: int, store: Callable[[Transition], None] | None = None) -> list[Transition]:
        perf = time.perf_counter
        t0 = perf()
        action = self.policy.act(self.obs, self.epsilon(self.steps))
        t1 = perf()
        next_obs, reward, terminated, truncated, _ = self.env.step(action)
        t2 = perf()
        transitions = self.record(self.obs, action, reward, next_obs, terminated, truncated, version)
        if store is not None:
            for transition in transitions:
                store(transition)
        t3 = perf()
        self.ended = terminated or truncated
        if self.ended:
            self.obs, _ = self.env.reset(seed=self.episode_seed)
            self.env_s += perf() - t3  # a reset is env work too
        else:
            self.obs = next_obs
        self.act_s += t1 - t0
        self.env_s += t2 - t1
        self.fold_s += t3 - t2
        return transitions

    def save(self) -> dict:
        return {**super().save(), "policy_rng": self.policy.rng.bit_generator.state,
                "seconds": {"act": self.act_s, "env": self.env_s, "fold": self.fold_s}}

    def restore(self, state: dict) -> int:
        dropped = super().restore(state)
        self.policy.rng.bit_generator.state = state["policy_rng"]
        self.act_s, self.env_s, self.fold_s = (state["seconds"][k] for k in ("act", "env", "fold"))
        self.obs, _ = self.env.reset(seed=self.episode_seed)
        return dropped

    def close(self) -> None:
        self.env.close()


# ============================================================================== epsilon per actor
def actor_epsilon(cfg: DQNConfig, index: int, run_steps: Callable[[], int] | None = None):
    """Epsilon as a function of this actor's own env steps."""
    if cfg.actor_epsilons == "apex":  # Horgan et al. 2018: fixed, spread over the actors
        eps = 0.4 ** (1 + 7 * index / max(1, cfg.num_workers - 1))
        return lambda own_steps: eps
    schedule = EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps)
    if cfg.actor_quotas == "free" and run_steps is not None:  # actors' own counts differ: use the run's
        return lambda own_steps: schedule(run_steps())
    # The global step is estimated as N x this actor's steps: exact when the actors keep pace
    # (they stop together at every checkpoint) and reproducible whatever the timing. A resumed
    # actor continues from its own saved step count, never from eps_start.
    return lambda own_steps: schedule(own_steps * cfg.num_workers)


def resume_epsilons(cfg: DQNConfig, stream_states: list[dict]) -> list[float]:
    """The epsilon each resumed actor acts with first: its schedule at its saved step count (the
    run's, for free-running actors)."""
    run_steps = sum(state["steps"] for state in stream_states)
    return [actor_epsilon(cfg, i, lambda: run_steps)(state["steps"]) for i, state in enumerate(stream_states)]
