"""What the main process of a multi-worker design keeps of its workers: their status rows.

Each worker publishes its counters (env steps, episodes, time per role) into its row of a shared
status array (transport.shared.STATUS_DTYPE); these helpers write and read them, carry them over a
resume, sum them into the run's episode totals and per-worker shares, and check before any block
or worker exists that a design's shared memory fits.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from architectures.core.config import DQNConfig
from architectures.core.diagnostics import shares
from architectures.core.envs import env_spec
from architectures.core.limits import parameter_shapes
from architectures.run.acting import EpisodeStats
from architectures.transport.shared import check_shared_memory


def check_design_memory(cfg: DQNConfig, needs: Callable, what: str) -> None:
    """Check `needs(cfg, env spec, parameter shapes)` against /dev/shm before any block or worker
    exists: a design that cannot fit stops with one line (shared.check_shared_memory). The shapes
    are counted from the sizes (limits.parameter_shapes, as the machine's memory check counts
    them), never by building a network that may itself not fit."""
    spec = env_spec(cfg.env_id)
    check_shared_memory(needs(cfg, spec, parameter_shapes(spec, cfg.hidden_sizes, cfg.layer_norm)), what)


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


RESTART_FIELDS = ("pid", "heartbeat", "state", "q_mean", "q_max", "grad_norm", "replay_size")
"""Status fields of a process's own life, and its latest batch's figures (written again by its
next batch): not carried over to the process that resumes it."""


def restore_status(status: np.ndarray, saved: np.ndarray) -> None:
    """Workers' counters (env steps, episodes, updates, time per role, ...) as they were at the
    checkpoint, for the processes that resume them."""
    for name in status.dtype.names:
        if name not in RESTART_FIELDS and name in saved.dtype.names:  # a field the checkpoint predates starts at 0
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
