"""hogwild's result: how often workers' writes overlapped, how stale their gradients were, whose
Adam state was in force, and each worker's share of the work; and its workers' learning figures
for the live curves (their batches live in the workers, so each writes its own to its status row)."""

from __future__ import annotations

import numpy as np

from architectures.run.base import Run
from architectures.run.worker_rows import per_worker_summary, status_episodes

WORKER_TIMES = ("env_step", "act", "sample", "gradient", "apply")
"""What a hogwild worker's time goes to."""


def write_figures(status_row, learner, replay) -> None:
    """A worker's latest batch into its status row: Q(s, a) mean and max, the gradient norm before
    clipping (where clipped), and its replay's size. Every 256 env steps: three small reads."""
    q = learner.last_q_taken
    if q is not None:
        status_row["q_mean"], status_row["q_max"] = float(q.mean()), float(q.max())
    if learner.last_grad_norm is not None:
        status_row["grad_norm"] = float(learner.last_grad_norm)
    status_row["replay_size"] = replay.size


def hogwild_figures(status: np.ndarray, capacity: int, shared_size: int | None) -> dict[str, float]:
    """What the main process logs of the workers' learning: Q(s, a) mean (over the workers that
    have learned) and max, their gradient norms' mean, and the replay's fill (the shared one's, or
    every worker's own together: `capacity` is theirs summed)."""
    learned = status["updates"] > 0
    size = shared_size if shared_size is not None else int(status["replay_size"].sum())
    figures = {"replay_fill": size / capacity}
    if learned.any():
        figures.update(q_mean=float(status["q_mean"][learned].mean()), q_max=float(status["q_max"][learned].max()))
        if status["grad_norm"][learned].any():
            figures["grad_norm"] = float(status["grad_norm"][learned].mean())
    return figures


def hogwild_summary(run: Run, final: np.ndarray, *, env_steps: int, startup_seconds: float,
                    shared_adam_steps: float | None, replay_sources: np.ndarray | None) -> dict:
    """The result of a hogwild run: how often workers' writes overlapped, how stale their
    gradients were, whose Adam state was in force, and each worker's share of the work."""
    cfg, n, global_steps = run.cfg, len(final), env_steps
    updates = int(final["updates"].sum())
    per_worker = {name: float(final[f"t_{name}"].mean()) for name in WORKER_TIMES}
    summary = per_worker_summary(final, replay_sources, None)  # a local replay holds only its own worker's rows
    summary["worker_shares"]["updates"] = (final["updates"] / max(1, updates)).tolist()
    result = run.result(
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
