"""Parallel DQN architectures sharing one env factory, Q-network, replay, update and evaluation.

`ARCHITECTURES` maps a name to the module that implements it; each module has
`train(cfg: DQNConfig, reporter: Reporter | None) -> dict`. Modules are imported on demand so
that naming an architecture costs nothing until it runs. `get_train_fn(name, backend)` is the
one place a backend is chosen: actor_learner on Ray is its own module (`BACKENDS`), so neither
actor_learner file imports the other (tests/test_imports.py).
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


BACKENDS: dict[tuple[str, str], str] = {("actor_learner", "ray"): "architectures.actor_learner_ray"}
"""(architecture, backend) -> module, for backends other than `local`."""


def _module(name: str, backend: str):
    if name not in ARCHITECTURES:
        raise KeyError(f"architecture: unknown {name!r} (valid: {', '.join(ARCHITECTURES)})")
    return importlib.import_module(BACKENDS.get((name, backend), ARCHITECTURES[name]))


def get_train_fn(name: str, backend: str = "local") -> Callable:
    return _module(name, backend).train


def preflight(name: str, cfg) -> None:
    """The checks made before any work: the env can be made and has the spaces DQN needs, the
    run fits this machine (limits.check_machine: cores, memory, CUDA, the env's episode cap),
    and the design's own (shared memory that must fit, settings it refuses); a ConfigError names
    the problem in one line (tests/test_config_limits.py)."""
    from architectures.envs import env_spec
    from architectures.limits import check_machine

    module = _module(name, cfg.backend)
    check_machine(name, cfg, env_spec(cfg.env_id))  # a probe env: its action and observation spaces
    check = getattr(module, "preflight", None)
    if check is not None:
        check(cfg)
