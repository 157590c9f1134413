"""A sweep's grid of runs: the cells crossed with the seeds, the command line's `with` overrides
applied to every cell, each run's deterministic id (`<sweep>-<hash>`), `--cells` picking part of
it, and every run's config checked before any starts (experiments/sweep.py runs them)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from architectures.registry import NAMES, PARALLEL
from experiments.tracking.configs import algorithm_values
from experiments.sweeps.spec import Sweep
from experiments.sweeps.catalog import SEED_SETS

ARCHITECTURE_CONFIGS = NAMES  # every design has a named config of its own name (experiments/tracking/configs.py)
PARALLEL_ARCHITECTURES = PARALLEL  # a main process plus num_workers


@dataclass(frozen=True)
class Overrides:
    """`with NAMED ... KEY=VALUE ...` from the sweep's command line, applied to every cell."""

    named: tuple[str, ...] = ()
    updates: dict = field(default_factory=dict)

    @staticmethod
    def parse(tokens: list[str]) -> "Overrides":
        from sacred.arg_parser import get_config_updates

        updates, named = get_config_updates(tokens)
        return Overrides(tuple(named), updates)

    def text(self) -> str:
        """As typed: `with cartpole lr=0.001` (empty without overrides)."""
        items = [*self.named, *(f"{k}={_sacred_value(v)}" for k, v in sorted(self.updates.items()))]
        return f"with {' '.join(items)}" if items else ""

    def digest(self) -> str:
        key = json.dumps({"named": self.named, "updates": self.updates}, sort_keys=True)
        return hashlib.sha1(key.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    architecture: str
    named: tuple[str, ...]
    updates: dict
    seed: int
    experiment: str = "train"
    overrides: str = ""
    """The sweep's `with ...` text this run carries (shown in its label and stored with it)."""
    overridden: tuple[str, ...] = ()
    """The named configs and keys that text set: its label shows them once, in the brackets."""
    meta: dict = field(default_factory=dict)
    """Its cell's `meta`: stored with its result (`cell_meta`), not in its config."""

    def sacred_args(self) -> list[str]:
        return ["with", *self.named, *(f"{k}={_sacred_value(v)}" for k, v in sorted(self.updates.items())),
                f"seed={self.seed}"]

    def config(self) -> dict:
        """The run's config as Sacred resolves it: defaults, then each named config, then overrides."""
        from experiments.tracking.configs import resolve

        return resolve(self.named, {**self.updates, "seed": self.seed})

    def processes(self) -> int:
        """Processes the run keeps busy: the CPUs a Ray task reserves for it."""
        if self.architecture not in PARALLEL_ARCHITECTURES:
            return 1
        return int(self.config().get("num_workers", 1)) + 1

    def label(self) -> str:
        """`cartpole single_env seed=101 batch_size=16 [with lr=0.001]`: the cell, then the sweep's
        overrides once, in brackets; a named config whose env an overridden env_id replaced is left
        out (a run on the user's env was labelled `cartpole`)."""
        from experiments.tracking.configs import NAMED_CONFIGS

        replaced = "env_id" in self.overridden
        named = [n for n in self.named if n not in self.overridden
                 and not (replaced and "env_id" in NAMED_CONFIGS.get(n, {}))]
        extra = " ".join(f"{k}={v}" for k, v in sorted(self.updates.items())
                         if k not in _QUIET_KEYS and k not in self.overridden)
        text = f"{' '.join(named)} seed={self.seed} {extra}".strip()
        return f"{text} [{self.overrides}]" if self.overrides else text


def _sacred_value(value) -> str:
    """A value as Sacred's `with key=value` parses it: Python literals (True, not JSON's true),
    strings as they are."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return repr(value)
    return json.dumps(value)


_QUIET_KEYS = {"eval_episodes", "log_every", "eval_every", "learning_starts", "eps_decay_steps", "buffer_size"}


def one_env(cells: list, overrides: Overrides) -> list:
    """With `env_id` overridden, the cells of the sweep's first env only: a grid that also holds
    MinAtar cells (scaling, the paper-scale headline) would otherwise run the user's env twice,
    under two envs' learner settings, and the report would pool them as one env's points."""
    if "env_id" not in overrides.updates or not cells:
        return cells
    envs = [next((n for n in c.named if n not in ARCHITECTURE_CONFIGS), None) for c in cells]
    return [c for c, env in zip(cells, envs) if env == envs[0]]



def expand(sweep: Sweep, scale: str, seeds: int | None, overrides: Overrides | None = None) -> list[RunSpec]:
    """The sweep's runs: every cell, with `overrides` after the cell's own named configs and
    updates (as Sacred applies them), crossed with the seeds; ids hash the resolved cell."""
    overrides = overrides or Overrides()
    runs = []
    for cell in one_env(sweep.cells[scale], overrides):
        experiment = cell.experiment or sweep.experiment
        if experiment != "train":
            architecture = experiment  # not an architecture: always available
        else:
            architecture = next((n for n in cell.named if n in ARCHITECTURE_CONFIGS),
                                cell.updates.get("design", cell.updates.get("architecture", "single_env")))
        named, updates = (*cell.named, *overrides.named), {**cell.updates, **overrides.updates}
        for seed in SEED_SETS[sweep.seed_set][sweep.seed_skip:][:seeds or sweep.seeds[scale]]:
            resolved = {"named": named, "updates": updates, "seed": seed}
            if cell.experiment:  # a cell of its own experiment is another run, whatever its config
                resolved["experiment"] = cell.experiment
            if cell.meta:  # runs that cite other predictions are other runs
                resolved["meta"] = cell.meta
            key = json.dumps(resolved, sort_keys=True)
            run_id = f"{sweep.name}-{hashlib.sha1(key.encode()).hexdigest()[:10]}"
            runs.append(RunSpec(run_id, architecture, named, updates, seed, experiment, overrides.text(),
                                (*overrides.named, *overrides.updates), dict(cell.meta)))
    if sweep.interleave:  # seed by seed; the sort is stable, so cells keep their order within a seed
        order = SEED_SETS[sweep.seed_set]
        runs.sort(key=lambda run: order.index(run.seed))
    return runs


def pick_cells(runs: list[RunSpec], patterns: str) -> list[RunSpec]:
    """`--cells A/B,C`: only the runs of the cells whose named configs (and experiment) include
    every `/`-separated name of some pattern, e.g. `minatar_breakout_cpu/high_utd`; a `key=value`
    part must equal the run's resolved setting of that key, defaults included
    (`cartpole/high_utd/utd=4/layer_norm=True/reset_period=0`), for grids such as `utd` whose cells
    differ only there. The ids stay the whole sweep's, so a part
    made now is the same runs the whole sweep would skip later
    (tests/test_sweep.py::test_cells_picks_part_of_a_sweep_with_the_whole_sweeps_ids). No pattern,
    or one that picks nothing, is a ValueError naming it and the cells there are."""
    def cells() -> str:  # for the error only
        return ", ".join(sorted({"/".join(r.named) + ("" if r.experiment == "train" else "/" + r.experiment)
                                 for r in runs}))

    def matches(parts: list[str], run: RunSpec) -> bool:
        names = set(run.named) | {run.experiment}
        config = run.config() if any("=" in part for part in parts) else {}
        for part in parts:
            key, eq, value = part.partition("=")
            if not (config.get(key.strip(), _MISSING) == _literal(value) if eq else part in names):
                return False
        return True

    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    if not wanted:
        raise ValueError(f"--cells: no pattern given (got {patterns!r}); this sweep's cells: {cells()}")
    chosen = [[part.strip() for part in p.split("/")] for p in wanted]
    for pattern, parts in zip(wanted, chosen):
        if not any(matches(parts, run) for run in runs):
            raise ValueError(f"--cells: {pattern!r} names no cell of this sweep; its cells: {cells()}")
    return [run for run in runs if any(matches(parts, run) for parts in chosen)]


_MISSING = object()


def _literal(text: str):
    """`4` -> 4, `True` -> True, `'a'`/`a` -> 'a': a `--cells` value as Sacred would read it."""
    import ast
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return text.strip()


TIMING_KEYS = ("network", "batch_size", "torch_threads", "device", "updates", "warmup")
"""The keys of the timing experiment (experiments/timing.py): what a timing sweep may override."""


def check_runs(runs: list[RunSpec], overrides: Overrides) -> None:
    """Build every run's config before any run starts: a bad key or value is one ConfigError."""
    from architectures.core.config import ConfigError, DQNConfig
    from architectures.core.envs import env_spec
    from experiments.tracking.configs import NAMED_CONFIGS

    for name in overrides.named:
        if name not in NAMED_CONFIGS:
            raise ConfigError(f"with {name}: unknown named config (valid: {', '.join(NAMED_CONFIGS)})")
        if name in ARCHITECTURE_CONFIGS:  # it would relabel every cell's design behind the sweep's back
            raise ConfigError(f"with {name}: a design's named config; the sweep's cells choose the "
                              "design (pick a sweep, or `python -m experiments.train with ...` for one design)")
    for key in ("design", "architecture", "seed"):
        if key in overrides.updates:
            raise ConfigError(f"{key}: set by the sweep itself (each cell's design, --seeds), not by `with`")
    envs = set()
    for run in runs:
        if run.experiment == "timing":
            unknown = sorted(set(overrides.updates) - set(TIMING_KEYS))
            if unknown:
                raise ConfigError(f"{unknown[0]}: not a key of the timing experiment (valid: {', '.join(TIMING_KEYS)})")
            continue
        config = algorithm_values(run.config())
        config["checkpoint_path"] = f"{run.run_id}.pt"  # every sweep run gets one (run_command)
        envs.add(DQNConfig.from_dict(config).env_id)
    for env_id in sorted(envs):  # the spaces DQN needs, from one probe env each
        env_spec(env_id)

