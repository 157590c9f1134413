"""The one environment factory, and the seeds every design trains and evaluates on.

Seeds. Training episodes are seeded explicitly from the run seed and the env index, drawn from
[0, 2**31); the holdout seeds are the fixed list 2**31, 2**31 + 1, ... . The two sets are
disjoint by construction, and every run of every design evaluates on the same holdout.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from architectures.core.env_guard import GuardedEnv
from architectures.core.errors import ConfigError

TRAIN_SEED_LIMIT = 2**31
"""Training-episode seeds are drawn from [0, TRAIN_SEED_LIMIT)."""
HOLDOUT_SEED_BASE = 2**31
"""Holdout episode k is seeded HOLDOUT_SEED_BASE + k: the same list for every run."""

_minatar_registered = False


def _register_minatar() -> None:
    global _minatar_registered
    if not _minatar_registered:
        import minatar.gym  # registers "MinAtar/<Game>-v0/v1"

        minatar.gym.register_envs()
        _minatar_registered = True


def check_env_id(env_id: str) -> str | None:
    """None if `env_id` names a registered gymnasium env, else a one-line reason.

    Users' own envs work the standard gymnasium way, `module:EnvId`: the module (on PYTHONPATH)
    is imported and registers the env, in every process that makes one (gym.make does the
    import itself, so spawned workers, vector_env's env processes and Ray actors need
    nothing more than the module on their path)."""
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except Exception as err:  # noqa: BLE001 - whatever the user's module raises, in one line
            detail = str(err).strip().splitlines()[0] if str(err).strip() else ""
            return f"module {module!r} does not import ({type(err).__name__}: {detail}); is it on PYTHONPATH?"
    if name.startswith("MinAtar/"):
        _register_minatar()
    try:
        gym.spec(name)
    except Exception:
        if module:
            return (f"module {module!r} does not register a gymnasium env {name!r} "
                    f"(gymnasium.register(id={name!r}, ...))")
        hint = ""
        if name.lower().startswith("minatar"):
            hint = "; MinAtar ids look like 'MinAtar/Breakout-v1'"
        elif ":" not in env_id and "." not in name:
            hint = "; an env of your own is named 'your_module:YourEnv-v0'"
        return f"unknown gymnasium id {env_id!r}{hint}"
    return None


class CPUCostWrapper(gym.Wrapper):
    """Adds `cost_us` microseconds of busy CPU time to every step (an expensive simulator).

    It spins on this thread's CPU clock, not the wall clock, so the work done per step is the
    same whether or not the process is descheduled: under contention the step gets slower, as
    a real simulator's would.
    """

    def __init__(self, env: gym.Env, cost_us: float):
        super().__init__(env)
        self.cost_ns = int(cost_us * 1000)

    def step(self, action):
        end = time.thread_time_ns() + self.cost_ns
        while time.thread_time_ns() < end:
            pass
        return self.env.step(action)


class WaitCostWrapper(gym.Wrapper):
    """Adds `wait_us` microseconds to every step that block without using the CPU: an env whose
    work happens elsewhere (a simulator process, a socket, a device). On a small machine it
    reaches a many-core machine's regime: an actor waiting on its env costs the machine only its
    acting and its hand-off, so many actors fit on few cores and the learner's bound is reached
    as it would be there. What it leaves out: an env whose step burns CPU still needs the cores
    (`env_step_cost_us`, CPUCostWrapper).

    A plain sleep overshoots on Linux (timer slack, wake-up latency; more under load:
    docs/design-notes.md#waitcostwrapper), so the wrapper sets this thread's timer slack to 1 ns
    where it can and corrects each sleep by the mean overshoot seen so far: the achieved wait per
    step (`achieved_us`) is held at `wait_us`
    (tests/test_envs.py::test_a_waiting_step_blocks_for_its_wait_without_cpu).
    """

    def __init__(self, env: gym.Env, wait_us: float):
        super().__init__(env)
        self.wait_s = wait_us / 1e6
        self.correction_s = 0.0  # subtracted from each sleep: the overshoot, learned
        self.waited_s, self.waits = 0.0, 0
        _tighten_timer_slack()

    def step(self, action):
        began = time.perf_counter()
        time.sleep(max(0.0, self.wait_s - self.correction_s))
        took = time.perf_counter() - began
        self.correction_s = min(self.wait_s, max(0.0, self.correction_s + 0.1 * (took - self.wait_s)))
        self.waited_s += took
        self.waits += 1
        return self.env.step(action)

    @property
    def achieved_us(self) -> float:
        return 1e6 * self.waited_s / max(1, self.waits)


def _tighten_timer_slack() -> None:
    """prctl(PR_SET_TIMERSLACK, 1): sleeps end within ~a microsecond of their deadline instead of
    the default 50 us slack (Linux only; elsewhere the correction alone holds the mean)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _one_line(space) -> str:
    text = " ".join(str(space).split())
    return text if len(text) <= 80 else text[:77] + "..."


DEFAULT_EPISODE_CAP = 108_000
"""Env steps after which an episode of an env registered without a cap is cut, so that every holdout
ends: Atari's 30 minutes at 60 Hz (Machado et al. 2018), the MinAtar configs' own max_episode_steps,
above every episode the suite has recorded. MinAtar registers its games without a cap."""


def episode_limit(env_id: str, max_episode_steps: int = 0) -> tuple[int, str]:
    """(the env steps after which every episode, training and holdout, is cut; where that number
    comes from: "max_episode_steps", "env" for the env's registered cap, or "default")."""
    if max_episode_steps > 0:
        return max_episode_steps, "max_episode_steps"
    try:
        registered = gym.spec(env_id.rpartition(":")[2]).max_episode_steps
    except Exception:  # noqa: BLE001 - an id gym.make accepts but gym.spec cannot resolve: no cap known
        registered = None
    return (registered, "env") if registered else (DEFAULT_EPISODE_CAP, "default")


def episode_limit_note(env_id: str) -> str:
    """What a run says once when an env has no cap of its own and max_episode_steps is not set."""
    return (f"max_episode_steps: {env_id!r} is registered without an episode cap, so every episode, training and "
            f"holdout, is cut after {DEFAULT_EPISODE_CAP:,} env steps (the default; max_episode_steps=N sets "
            "another)")


def make_env(env_id: str, env_step_cost_us: float = 0.0, env_step_wait_us: float = 0.0,
             max_episode_steps: int = 0, holdout: bool = False) -> gym.Env:
    """Create one env, with `env_step_cost_us` of busy CPU and `env_step_wait_us` of blocking
    wait added to each step, its episodes truncated after `max_episode_steps` env steps
    (gymnasium's TimeLimit; 0 keeps the env's registered cap, or DEFAULT_EPISODE_CAP where it has
    none, so no holdout can run forever), and whatever it
    raises turned into one line (GuardedEnv; `holdout` says so there). Seeding happens at reset
    (`training_episode_seeds`, `holdout_seeds`)."""
    problem = check_env_id(env_id)
    if problem:
        raise ConfigError(f"env_id: {problem}")
    # The passive env checker only inspects the first steps but stays in the call path.
    try:
        env = gym.make(env_id, disable_env_checker=True, max_episode_steps=max_episode_steps or None)
        if env.spec is not None and env.spec.max_episode_steps is None:  # registered without a cap
            env = gym.wrappers.TimeLimit(env, DEFAULT_EPISODE_CAP)
    except Exception as err:  # noqa: BLE001 - the user's own constructor: whatever it raises, one line
        message = " ".join(str(err).split())[:200]
        raise ConfigError(f"env_id: {env_id!r} could not be made: {type(err).__name__}: {message}") from err
    if not isinstance(env.action_space, gym.spaces.Discrete):
        env.close()
        raise ConfigError(f"env_id: {env_id!r} has action space {_one_line(env.action_space)}; DQN needs a "
                          "Discrete action space")
    if not isinstance(env.observation_space, gym.spaces.Box):
        env.close()
        raise ConfigError(f"env_id: {env_id!r} has observation space {_one_line(env.observation_space)}; the "
                          "Q-network needs a Box (flatten dict or tuple observations with a wrapper first)")
    if env_step_cost_us > 0:
        env = CPUCostWrapper(env, env_step_cost_us)
    if env_step_wait_us > 0:
        env = WaitCostWrapper(env, env_step_wait_us)
    return GuardedEnv(env, env_id, ", holdout" if holdout else "")


@dataclass(frozen=True)
class EnvSpec:
    """What the Q-network and the replay need to know of an env, read once from a probe env."""

    obs_shape: tuple
    obs_dtype: np.dtype
    num_actions: int


def env_spec(env_id: str) -> EnvSpec:
    """The spaces of one probe env (make_env checks the id first, in one line): the run's one look at
    the user's env before any work (architectures.preflight)."""
    probe = make_env(env_id)
    try:
        space = probe.observation_space
        return EnvSpec(tuple(space.shape), np.dtype(space.dtype), int(probe.action_space.n))
    finally:
        probe.close()


class EpisodeSeeds:
    """Endless, reproducible stream of reset seeds for one training env (never a holdout seed).

    An iterator whose position can be saved and restored (`state`), so a resumed run draws
    the same episode seeds an uninterrupted one would."""

    def __init__(self, run_seed: int, env_index: int):
        self.rng = np.random.default_rng(np.random.SeedSequence([run_seed, env_index, 0x5EED]))

    def __iter__(self) -> "EpisodeSeeds":
        return self

    def __next__(self) -> int:
        return int(self.rng.integers(0, TRAIN_SEED_LIMIT))

    @property
    def state(self) -> dict:
        return self.rng.bit_generator.state

    @state.setter
    def state(self, value: dict) -> None:
        self.rng.bit_generator.state = value


def training_episode_seeds(run_seed: int, env_index: int) -> EpisodeSeeds:
    """The reset seeds of training env `env_index` in run `run_seed`."""
    return EpisodeSeeds(run_seed, env_index)


def rng_seeds(run_seed: int) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """(acting, replay) seed sequences of run `run_seed`; worker i of N acts on acting.spawn(N)[i]."""
    act, replay = np.random.SeedSequence(run_seed).spawn(2)
    return act, replay


def holdout_seeds(episodes: int) -> list[int]:
    """The fixed holdout: identical for every run, design and checkpoint."""
    return [HOLDOUT_SEED_BASE + k for k in range(episodes)]
