"""The one list of designs: what each is, where it lives, and how the rest of the suite treats it.

Pure data, importing nothing: experiments/ (sweeps, plans, benchmarks) and analysis/ (figure
order and colours, the cost model) read it without loading torch or any design. A new design is
one entry here, its module under designs/, a named config and its tests (docs/results-layout.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Design:
    """One design. `workers` says what its `num_workers` counts (None: it runs in one process);
    `replay`: it learns from a replay buffer; `cost_model`: its entry in analysis/cost/model.py."""

    name: str
    module: str
    summary: str
    workers: str | None
    replay: bool
    cost_model: str
    backends: dict[str, str] = field(default_factory=dict)


DESIGNS: tuple[Design, ...] = (
    Design("single_env", "architectures.designs.single_env",
           "one process: act, step, store, update, in turn (the baseline)", None, True, "single_env"),
    Design("actor_learner", "architectures.designs.actor_learner.local",
           "actor processes only act and hand transitions through shared memory to one learner, which owns the "
           "replay and publishes versioned weights (Ape-X)", "actors", True, "actor_learner",
           backends={"ray": "architectures.designs.actor_learner.ray_backend",
                     "inprocess": "architectures.designs.actor_learner.inprocess"}),
    Design("vector_env", "architectures.designs.vector_env",
           "one process acts, batched, on whichever env processes have answered (EnvPool's async mode, "
           "through shared memory) and learns while the others step",
           "envs", True, "vector_env"),
    Design("hogwild", "architectures.designs.hogwild",
           "worker processes act and learn, writing into shared parameters lock-free or under one lock",
           "workers", True, "hogwild"),
    Design("high_utd", "architectures.designs.high_utd",
           "single_env's loop at many updates per env step, with LayerNorm, resets and divergence detection",
           None, True, "single_env"),
    Design("pqn", "architectures.designs.pqn",
           "one process, num_workers envs in subprocesses, batched acting; each rollout learned from once with "
           "Q(lambda) targets and LayerNorm, no replay and no target network (Gallici et al. 2024)",
           "envs", False, "pqn"),
)
"""In the order figures and tables list them; a design's colour is its place in this order."""

NAMES: tuple[str, ...] = tuple(d.name for d in DESIGNS)
PARALLEL: tuple[str, ...] = tuple(d.name for d in DESIGNS if d.workers)
"""The designs whose num_workers starts worker processes (or envs in them)."""


def design(name: str) -> Design:
    for entry in DESIGNS:
        if entry.name == name:
            return entry
    raise KeyError(f"design: unknown {name!r} (valid: {', '.join(NAMES)})")
