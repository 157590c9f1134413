"""Pieces every multi-worker design shares: quotas, epsilons, priorities, stream states, summaries.

actor_learner (both backends), hogwild and vector_env import these; none of them imports
another architecture file (tests/test_imports.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from architectures.config import DQNConfig
from architectures.diagnostics import PolicyLag, name_bottleneck, shares
from architectures.dqn import EpsilonSchedule
from architectures.loop import EpisodeStats, LearnerLoop, Stop
from architectures.networks import GreedyPolicy
from architectures.replay import Transition
from architectures.envs import env_spec
from architectures.limits import parameter_shapes
from architectures.shared import Control, check_shared_memory
from architectures.workers import Waiter, check_weights_flow

ACTOR_ROLES = ("env_step", "act", "n_step", "handoff", "weight_sync", "wait")
"""What an actor's time goes to; `wait` is idle (rate limiter, a full ring)."""
WORKER_TIMES = ("env_step", "act", "sample", "gradient", "apply")
"""What a hogwild worker's time goes to."""


def worker_quota(env_steps: int, num_workers: int, index: int) -> int:
    """Worker `index`'s share of `env_steps`; the shares sum to env_steps exactly."""
    return env_steps // num_workers + (index < env_steps % num_workers)


def worker_stops(stops: list[Stop], num_workers: int, index: int) -> list[int]:
    """Worker `index`'s own env-step count at each of the run's parking points."""
    return [worker_quota(stop.env_steps, num_workers, index) for stop in stops]


class StepQuota:
    """How far an actor may step before it parks at parking point k (`actor_quotas`).

    `equal`: exactly its share of the point's env steps (worker_stops), whatever its speed.
    `free`: it claims steps from the run's shared count (Control.CLAIMED, under `lock`, up to 8
    at a time) until the count reaches the point; fast actors claim more. Either way the actors'
    steps add up to the parking point exactly."""

    CHUNK = 8

    def __init__(self, cfg: DQNConfig, index: int, run_stops: list[Stop], control: Control, lock):
        self.free, self.control, self.lock = cfg.actor_quotas == "free", control, lock
        self.points = [s.env_steps for s in run_stops] if self.free else worker_stops(run_stops, cfg.num_workers,
                                                                                   index)
        self.k, self.budget = 0, 0

    def begin(self, k: int) -> None:
        self.k, self.budget = k, 0

    def may_step(self, own_steps: int) -> bool:
        if not self.free:
            return own_steps < self.points[self.k]
        if self.budget == 0:
            with self.lock:
                claimed = self.control[Control.CLAIMED]
                self.budget = min(self.CHUNK, self.points[self.k] - claimed)
                self.control[Control.CLAIMED] = claimed + self.budget
            if self.budget == 0:
                return False
        self.budget -= 1
        return True


def actor_epsilon(cfg: DQNConfig, index: int, run_steps: Callable[[], int] | None = None):
    """Epsilon as a function of this actor's own env steps."""
    if cfg.actor_epsilons == "apex":  # Horgan et al. 2018: fixed, spread over the actors
        eps = 0.4 ** (1 + 7 * index / max(1, cfg.num_workers - 1))
        return lambda own_steps: eps
    schedule = EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps)
    if cfg.actor_quotas == "free" and run_steps is not None:  # actors' own counts differ: use the run's
        return lambda own_steps: schedule(run_steps())
    # The global step is estimated as N x this actor's steps: exact when the actors keep pace
    # (they park together at every checkpoint) and reproducible whatever the timing. A resumed
    # actor continues from its own saved step count, never from eps_start.
    return lambda own_steps: schedule(own_steps * cfg.num_workers)


def resume_epsilons(cfg: DQNConfig, stream_states: list[dict]) -> list[float]:
    """The epsilon each resumed actor acts with first: its schedule at its saved step count (the
    run's, for free-running actors)."""
    run_steps = sum(state["steps"] for state in stream_states)
    return [actor_epsilon(cfg, i, lambda: run_steps)(state["steps"]) for i, state in enumerate(stream_states)]


def initial_priority(policy: GreedyPolicy, t: Transition) -> float:
    """Ape-X's initial priority: |n-step TD error| under the actor's local network."""
    bootstrap = float(policy.q_values(t.next_obs).max()) if t.discount > 0 else 0.0
    return abs(t.reward + t.discount * bootstrap - float(policy.q_values(t.obs)[t.action]))


def check_design_memory(cfg: DQNConfig, needs: Callable, what: str) -> None:
    """Check `needs(cfg, env spec, parameter shapes)` against /dev/shm before any block or worker
    exists: a design that cannot fit stops with one line (shared.check_shared_memory). The shapes
    are counted from the sizes (limits.parameter_shapes, as the machine's memory check counts
    them), never by building a network that may itself not fit."""
    spec = env_spec(cfg.env_id)
    check_shared_memory(needs(cfg, spec, parameter_shapes(spec, cfg.hidden_sizes, cfg.layer_norm)), what)


def park(k: int, run_stops: list[Stop], status_row, control: Control, waiter: Waiter, state_pipe,
         state: Callable[[], dict]) -> None:
    """In a worker, at parking point k: say so, send this worker's state if the point is a save
    (the main process reads it once every worker is parked), and wait to be released. Parked
    time is evaluation or checkpoint time: off every clock."""
    status_row["parked"] = k + 1
    waiter.main_bell.ring()
    if run_stops[k].save:
        state_pipe.send(state())
    if k + 1 < len(run_stops):
        waiter.until(lambda: control[Control.RELEASED] > k)


def all_parked(driver: LearnerLoop, status: np.ndarray, env_steps: int) -> bool:
    """In the main process: every worker is parked at the next parking point."""
    return bool((status["parked"] > driver.next_stop).all()) and env_steps == driver.stops[driver.next_stop].env_steps


def publish_times(status_row, seconds: dict[str, float]) -> None:
    """A worker's time per role into its status row (fields `t_<role>`), for the learner's breakdown."""
    for role, value in seconds.items():
        status_row[f"t_{role}"] = value


def status_episodes(status: np.ndarray) -> EpisodeStats:
    """The episode totals of every worker, from their status rows."""
    return EpisodeStats(int(status["episodes"].sum()), int(status["episode_length_sum"].sum()),
                        float(status["episode_return_sum"].sum()))


def write_episodes(status_row, stats: EpisodeStats) -> None:
    status_row["episodes"], status_row["episode_length_sum"] = stats.episodes, stats.length_sum
    status_row["episode_return_sum"] = stats.return_sum


RESTART_FIELDS = ("pid", "heartbeat", "state")
"""Status fields of a process's own life: not carried over to the process that resumes it."""


def restore_status(status: np.ndarray, saved: np.ndarray) -> None:
    """Workers' counters (env steps, episodes, updates, time per role, ...) as they were at the
    checkpoint, for the processes that resume them."""
    for name in status.dtype.names:
        if name not in RESTART_FIELDS:
            status[name] = saved[name]


def per_worker_summary(status: np.ndarray, replay_sources: np.ndarray | None, sampled: np.ndarray | None) -> dict:
    """Each worker's share of the env steps, the replay and the sampled batches, and its episodes:
    the answer to "do fast or short-episode workers dominate the data?"."""
    n = len(status)
    steps = status["env_steps"].astype(float)
    worker_shares = {"env_steps": (steps / max(1.0, steps.sum())).tolist()}
    if replay_sources is not None:
        worker_shares["replay"] = shares(replay_sources, n)
    if sampled is not None:
        worker_shares["sampled"] = (sampled / max(1, sampled.sum())).tolist()
    episodes = np.maximum(1, status["episodes"])
    return {"worker_shares": worker_shares, "worker_episodes": status["episodes"].tolist(),
            "worker_mean_episode_length": (status["episode_length_sum"] / episodes).tolist(),
            "worker_mean_episode_return": (status["episode_return_sum"] / episodes).tolist()}




def hogwild_summary(driver: LearnerLoop, final: np.ndarray, *, env_steps: int, startup_seconds: float,
                    shared_adam_steps: float | None, replay_sources: np.ndarray | None) -> dict:
    """The result of a hogwild run: how often workers' writes overlapped, how stale their
    gradients were, whose Adam state was in force, and each worker's share of the work."""
    cfg, n, global_steps = driver.cfg, len(final), env_steps
    updates = int(final["updates"].sum())
    per_worker = {name: float(final[f"t_{name}"].mean()) for name in WORKER_TIMES}
    summary = per_worker_summary(final, replay_sources, None)  # a local replay holds only its own worker's rows
    summary["worker_shares"]["updates"] = (final["updates"] / max(1, updates)).tolist()
    result = driver.result(
        env_steps=global_steps, episodes=status_episodes(final), updates=updates, num_workers=n,
        startup_seconds=startup_seconds, hogwild_lock=cfg.hogwild_lock, optimizer_state=cfg.optimizer_state,
        hogwild_replay=cfg.hogwild_replay,
        # Share of optimizer steps during which another worker was also inside its own step.
        overlap_fraction=float(final["overlaps"].sum()) / max(1, updates),
        # Updates other workers applied while one worker computed its gradient (gradient staleness).
        mean_version_gap=float(final["version_gap_sum"].sum()) / max(1, updates),
        worker_updates=final["updates"].tolist(),
        # Adam's step count as each worker saw it at the end: the total with a shared state, the
        # worker's own updates with per-worker states (the test of which one was in force).
        worker_adam_steps=final["adam_steps"].tolist(),
        # The shared Adam step counter counts every worker's steps when the state is shared.
        shared_adam_steps=shared_adam_steps,
        **summary,
        worker_time_breakdown={name: {"seconds_per_worker": s, "us_per_env_step": 1e6 * s * n / max(1, global_steps)}
                               for name, s in per_worker.items()},
    )
    if replay_sources is not None:  # rows a sampler redrew because a writer was inside them
        result["replay_resampled_rows"] = int(final["replay_resampled"].sum())
        result["replay_write_waits"] = int(final["replay_write_waits"].sum())
    for name, s in per_worker.items():
        result["component_costs_us"][f"worker_{name}"] = 1e6 * s * n / max(1, global_steps)
    return result


@dataclass
class HandoffTally:
    """The learner's side of the hand-off: transitions moved into the replay and the time it took,
    its idle waits for data, and (Ray) the requests it made."""

    transitions: int = 0
    seconds: float = 0.0
    waits: int = 0
    wait_seconds: float = 0.0
    requests: int = 0
    request_seconds: float = 0.0


class Publications:
    """The learner's weight publications, and which actors have yet to pick one up: the state of
    the watchdog that fails a run whose actor stops receiving weights (workers.check_weights_flow)."""

    def __init__(self, status: np.ndarray):
        self.status = status
        self.count, self.seconds = 0, 0.0
        self.pending = np.full(len(status), -1, dtype=np.int64)  # per actor: version not yet picked up
        self.since = np.zeros(len(status), dtype=np.int64)  # ... and that actor's env steps when published

    def published(self, version: int, seconds: float) -> None:
        self.count += 1
        self.seconds += seconds
        fresh = self.pending < 0
        self.pending[fresh] = version
        self.since[fresh] = self.status["env_steps"][fresh]

    def check(self, latest: int) -> None:
        check_weights_flow(self.status, self.pending, self.since, latest)

    def state(self) -> dict:
        return {"count": self.count, "seconds": self.seconds}

    def restore(self, state: dict) -> None:
        self.count, self.seconds = state["count"], state["seconds"]


class ActorBooks:
    """What the learner of an actor_learner run keeps of its actors, on either backend: their
    counters (`status`, one row per actor), the acting weights' staleness at hand-off, the weight
    publications and the hand-off tally. `parts` is what a checkpoint saves of them, `restore`
    puts it back, `result` is the run's result."""

    def __init__(self, cfg: DQNConfig, status: np.ndarray):
        self.cfg, self.status = cfg, status
        self.staleness = PolicyLag(seed=cfg.seed + 1)  # learner version at hand-off minus the acting version
        self.worker_staleness = np.zeros((len(status), 2))  # per actor: summed staleness, transitions
        self.publications = Publications(status)
        self.tally = HandoffTally()

    def store(self, rows: np.ndarray, priorities: np.ndarray, learner_version: int, replay) -> None:
        """Hand-off into the replay: record how stale the rows' acting weights were, then store them."""
        self.staleness.record(learner_version, rows["version"])
        n = len(self.status)
        self.worker_staleness[:, 0] += np.bincount(rows["source"], weights=learner_version - rows["version"],
                                                   minlength=n)[:n]
        self.worker_staleness[:, 1] += np.bincount(rows["source"], minlength=n)[:n]
        if self.cfg.prioritized:
            replay.extend(rows, priorities)  # the actors' initial priorities travel with the rows
        else:
            replay.extend(rows)

    def parts(self, actor_states: list[dict]) -> dict:
        return {"actors": actor_states, "status": self.status.copy(), "staleness": self.staleness.state_dict(),
                "worker_staleness": self.worker_staleness.copy(), "publications": self.publications.state(),
                "tally": vars(self.tally).copy()}

    def restore(self, saved: dict, driver: LearnerLoop) -> list[dict]:
        """Put the saved books back; returns each actor's saved stream state."""
        restore_status(self.status, saved["status"])
        self.staleness.load_state_dict(saved["staleness"])
        self.worker_staleness[:] = saved["worker_staleness"]
        self.publications.restore(saved["publications"])
        self.tally = HandoffTally(**saved["tally"])
        driver.dropped_on_resume = sum(state["pending"] for state in saved["actors"])
        driver.epsilon_at_resume = resume_epsilons(self.cfg, saved["actors"])
        return saved["actors"]

    def result(self, driver: LearnerLoop, *, env_steps: int, startup_seconds: float) -> dict:
        """The run's result: the learner's numbers and each actor's, the hand-off cost per
        transition, and the bottleneck role."""
        status = self.status
        n = len(status)
        tally, publications = self.tally, self.publications
        components = {"handoff_drain": (tally.seconds, tally.transitions),
                      "weight_publish": (publications.seconds, publications.count),
                      "wait": (tally.wait_seconds, tally.waits)}
        if tally.requests:  # Ray: the learner's requests for batches
            components["handoff_request"] = (tally.request_seconds, tally.requests)
        actor_seconds = {role: float(status[f"t_{role}"].mean()) for role in ACTOR_ROLES}
        result = driver.result(
            env_steps=env_steps, episodes=status_episodes(status), components=components,
            num_workers=n, startup_seconds=startup_seconds, weight_publishes=publications.count,
            worker_weights_versions=status["weights_version"].tolist(),
            worker_weight_fetches=status["weight_fetches"].tolist(),
            policy_lag=driver.lag.summary(),
            # How stale the acting weights were when a transition reached the learner (no replay age).
            acting_staleness=self.staleness.summary(),
            # ... and per actor: does a slow actor hand off staler transitions?
            worker_acting_staleness_mean=(self.worker_staleness[:, 0] / np.maximum(1, self.worker_staleness[:, 1])
                                          ).tolist(),
            actor_quotas=self.cfg.actor_quotas,
            **per_worker_summary(status, driver.replay.data["source"][:driver.replay.size], driver.sampled),
            actor_time_breakdown={role: {"seconds_per_actor": s, "us_per_env_step": 1e6 * s * n / max(1, env_steps)}
                                  for role, s in actor_seconds.items()},
        )
        breakdown = result["time_breakdown"]
        handoff_write = 1e6 * float(status["t_handoff"].sum()) / max(1, tally.transitions)
        handoff_drain = breakdown["handoff_drain"]["us_per_call"]
        handoff = {"actor_write": handoff_write, "learner_drain": handoff_drain}
        if tally.requests:
            handoff["learner_request"] = 1e6 * tally.request_seconds / max(1, tally.transitions)
        result["handoff_us_per_transition"] = {**handoff, "total": sum(handoff.values())}
        learner_parts = {name: row["seconds"] for name, row in breakdown.items() if name not in ("eval", "checkpoint")}
        result["bottleneck"] = name_bottleneck(result["train_seconds"],
                                               {"learner": learner_parts, "actors": actor_seconds}, result.get("cpu"))
        for role in ("env_step", "act", "n_step", "handoff", "weight_sync"):
            result["component_costs_us"][f"actor_{role}"] = result["actor_time_breakdown"][role]["us_per_env_step"] / n
        return result
