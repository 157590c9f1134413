"""hogwild's result: how often workers' writes overlapped, how stale their gradients were, whose
Adam state was in force, and each worker's share of the work."""

from __future__ import annotations

import numpy as np

from architectures.run.base import Run
from architectures.run.worker_rows import per_worker_summary, status_episodes

WORKER_TIMES = ("env_step", "act", "sample", "gradient", "apply")
"""What a hogwild worker's time goes to."""


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
