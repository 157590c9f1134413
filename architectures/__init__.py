"""Parallel DQN architectures sharing one env factory, Q-network, replay, update and evaluation.

`ARCHITECTURES` maps a name to the module that implements it; each module has
`train(cfg: DQNConfig, reporter: Reporter | None) -> dict`. Modules are imported on demand so
that naming an architecture costs nothing until it runs.
"""

from __future__ import annotations

import importlib
from typing import Callable

ARCHITECTURES: dict[str, str] = {
    "single_env": "architectures.single_env",
    "actor_learner": "architectures.actor_learner",
    "vector_env": "architectures.vector_env",
    "hogwild": "architectures.hogwild",
    "high_utd": "architectures.high_utd",
}


def get_train_fn(name: str) -> Callable:
    if name not in ARCHITECTURES:
        raise KeyError(f"architecture: unknown {name!r} (valid: {', '.join(ARCHITECTURES)})")
    return importlib.import_module(ARCHITECTURES[name]).train
