"""Parallel DQN designs sharing one env factory, Q-network, replay, update and evaluation.

The package by layer (tests/test_imports.py holds it): core/ (config, envs, networks, replay, the
DQN update, evaluation, metrics), transport/ (shared memory, worker processes, Ray support), run/
(the run's bookkeeping, learning from a replay, acting, sync points, checkpoints), designs/
(one module per design). registry.py is the one list of designs.

`ARCHITECTURES` maps a design's name to its module; each module has `train(cfg: DQNConfig,
reporter: Reporter | None) -> dict`. Modules are imported on demand, so naming a design costs
nothing until it runs. `get_train_fn(name, backend)` is the one place a backend is chosen:
actor_learner on Ray is its own module (`BACKENDS`), so neither actor_learner file imports the
other.

The Python API (api.py): `from architectures import train, load, DQNConfig`; `train(design,
**config)` returns a `Result` holding the trained Q-network. Loaded on first use, like the
designs, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Callable

from architectures.registry import DESIGNS

ARCHITECTURES: dict[str, str] = {d.name: d.module for d in DESIGNS}
BACKENDS: dict[tuple[str, str], str] = {(d.name, backend): module for d in DESIGNS
                                        for backend, module in d.backends.items()}
"""(design, backend) -> module, for backends other than `local`."""


def _module(name: str, backend: str):
    if name not in ARCHITECTURES:
        raise KeyError(f"design: unknown {name!r} (valid: {', '.join(ARCHITECTURES)})")
    return importlib.import_module(BACKENDS.get((name, backend), ARCHITECTURES[name]))


def get_train_fn(name: str, backend: str = "local") -> Callable:
    return _module(name, backend).train


def preflight(name: str, cfg) -> None:
    """The checks a run needs before any work, with no side effect (a dry run makes just these):
    the env can be made and has the spaces DQN needs, the run fits this machine
    (limits.check_machine: cores, memory, CUDA, n_step within an episode) and the design's own
    (shared memory that must fit, settings it refuses). A ConfigError names the problem in one
    line (tests/test_config_limits.py). An env registered without an episode cap is said once:
    its episodes are cut at the default cap."""
    import warnings

    from architectures.core.envs import env_spec, episode_limit, episode_limit_note
    from architectures.core.errors import RunWarning
    from architectures.core.limits import check_machine

    module = _module(name, cfg.backend)
    check_machine(name, cfg, env_spec(cfg.env_id))  # a probe env: its action and observation spaces
    check = getattr(module, "preflight", None)
    if check is not None:
        check(cfg)
    if episode_limit(cfg.env_id, cfg.max_episode_steps)[1] == "default":
        warnings.warn(episode_limit_note(cfg.env_id), RunWarning, stacklevel=2)


def before_run(name: str, cfg) -> None:
    """The one sequence the CLI, the API and experiments.train call before a run, so the same bad
    input gets the same line from each (tests/test_preflight.py): `preflight`, then a
    checkpoint_path the run can use that no other run holds (its lock is then this process's)."""
    from architectures.run.checkpoint import check_before_run

    preflight(name, cfg)
    check_before_run(name, cfg)


_LAZY = {"train": "architectures.api", "load": "architectures.api", "Result": "architectures.api",
         "DQNConfig": "architectures.core.config", "ConfigError": "architectures.core.errors"}


def __getattr__(name: str):
    """The API's names, imported on first use (PEP 562)."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'architectures' has no attribute {name!r}")


__all__ = ["ARCHITECTURES", "BACKENDS", "before_run", "get_train_fn", "preflight", *_LAZY]
