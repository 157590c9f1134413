"""Sync points: the env-step counts where multi-process designs stop their workers.

Every holdout checkpoint and every checkpoint save is a `Stop`. Stopped workers are the
consistent point a checkpoint needs (no transition in a ring, no update in flight) and the
still point an evaluation of shared weights needs. A worker steps to its quota of the next
stop (`worker_quota`, or claimed from the run's count with `actor_quotas=free`: `StepQuota`),
waits there (`wait_at_sync_point`), and the main process acts once `all_at_sync_point` says every worker is in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from architectures.core.config import DQNConfig
from architectures.core.evaluation import checkpoint_steps
from architectures.transport.notifier import Waiter
from architectures.transport.shared import Control


@dataclass(frozen=True)
class Stop:
    """An env-step count (summed over workers) where workers stop: to evaluate, to save, or both."""

    env_steps: int
    evaluate: bool
    save: bool


def stops(cfg: DQNConfig) -> list[Stop]:
    """Every holdout checkpoint, and every multiple of checkpoint_every short of the end."""
    evals = set(checkpoint_steps(cfg.total_env_steps, cfg.eval_every))
    every = cfg.checkpoint_every
    saves = set(range(every, cfg.total_env_steps, every)) if every else set()
    return [Stop(s, s in evals, s in saves) for s in sorted(evals | saves)]


def worker_quota(env_steps: int, num_workers: int, index: int) -> int:
    """Worker `index`'s share of `env_steps`; the shares sum to env_steps exactly."""
    return env_steps // num_workers + (index < env_steps % num_workers)


def worker_stops(stops: list[Stop], num_workers: int, index: int) -> list[int]:
    """Worker `index`'s own env-step count at each of the run's sync points."""
    return [worker_quota(stop.env_steps, num_workers, index) for stop in stops]


def room(stops: list[Stop], num_workers: int, index: int, k: int, own_steps: int, all_steps: int, free: bool) -> int:
    """Env steps worker `index` may still make before stop k, the one quota rule of the transports that
    hand out steps (Ray's requests, the in-process turns): its equal share of the stop less its own steps,
    or (`free`) the stop less everyone's, whoever steps first."""
    if free:
        return stops[k].env_steps - all_steps
    return worker_quota(stops[k].env_steps, num_workers, index) - own_steps


class StepQuota:
    """How far an actor may step before it stops at sync point k (`actor_quotas`).

    `equal`: exactly its share of the point's env steps (worker_stops), whatever its speed.
    `free`: it claims steps from the run's shared count (Control.CLAIMED, under `lock`, up to 8
    at a time) until the count reaches the point; fast actors claim more. Either way the actors'
    steps add up to the sync point exactly."""

    CHUNK = 8

    def __init__(self, cfg: DQNConfig, index: int, run_stops: list[Stop], control: Control, lock):
        self.free, self.control, self.lock = cfg.actor_quotas == "free", control, lock
        self.points = [s.env_steps for s in run_stops] if self.free else worker_stops(run_stops, cfg.num_workers,
                                                                                   index)
        self.k, self.budget = 0, 0

    def begin(self, k: int) -> None:
        self.k, self.budget = k, 0

    def may_step(self, own_steps: int) -> bool:
        if not self.free:  # room() > 0, with the shares precomputed: this runs every env step
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


def wait_at_sync_point(k: int, run_stops: list[Stop], status_row, control: Control, waiter: Waiter, state_pipe,
         state: Callable[[], dict]) -> None:
    """In a worker, at sync point k: say so, send this worker's state if the point is a save
    (the main process reads it once every worker is stopped), and wait to be released. Stopped
    time is evaluation or checkpoint time: off every clock."""
    status_row["at_sync_point"] = k + 1
    waiter.main_notifier.notify()
    if run_stops[k].save:
        state_pipe.send(state())
    if k + 1 < len(run_stops):
        waiter.until(lambda: control[Control.RELEASED] > k)


def all_at_sync_point(run, status: np.ndarray, env_steps: int) -> bool:
    """In the main process: every worker is stopped at the run's next sync point (a `Run`)."""
    return bool((status["at_sync_point"] > run.next_stop).all()) and env_steps == run.stops[run.next_stop].env_steps
