"""What a named sweep is: a grid of Cells per scale, crossed with seeds by experiments/sweeps/grid.py.
The sweeps themselves are data in experiments/sweeps/catalog.py, their grids built in cells.py."""

from __future__ import annotations

from dataclasses import dataclass, field

SCALES = ("small", "paper")

RUNS_AT_ONCE_ENV = "DQN_RUNS_AT_ONCE"
"""How many runs a sweep ran at once beside each other (`--jobs`), passed to each run in this
environment variable: experiments/train.py stores it with the result (`runs_at_once`), and the
report quotes speeds only from runs made one at a time."""

RAY_NODE_ENV = "DQN_RAY_NODE"
"""The Ray node a `--ray` sweep's run was placed on (JSON: node id, address, hostname), passed to
the run in this environment variable; experiments/train.py stores it as the run's `node`."""


CELL_META_ENV = "DQN_CELL_META"
"""What a sweep's cell says of its runs beyond their config (JSON: `Cell.meta`), passed to each run in
this environment variable: experiments/train.py stores it with the result (`cell_meta`)."""


@dataclass(frozen=True)
class Cell:
    named: tuple[str, ...]
    """Named configs applied first, in order (experiments/tracking/configs.py)."""
    updates: dict
    """Config overrides applied after them."""
    experiment: str | None = None
    """This cell's experiment when it is not the sweep's (`components`: the component costs the
    cost model predicts from, measured beside the runs it predicts)."""
    meta: dict = field(default_factory=dict)
    """Stored with each of the cell's runs and part of their ids, never their config: what the runs
    cite (plan_validation: the commit and digest of the predictions their budgets came from)."""


@dataclass(frozen=True)
class Sweep:
    name: str
    description: str
    minutes: dict[str, float]
    """Estimated wall-clock minutes on a 2-core machine, per scale."""
    cells: dict[str, list[Cell]]
    """Grid per scale."""
    seeds: dict[str, int] = field(default_factory=lambda: {"small": 1, "paper": 1})
    """Seeds per cell, per scale (`--seeds` overrides): the first N of `seed_set`."""
    seed_set: str = "evaluation"
    """Which of SEED_SETS the seeds come from: `calibration` for tuning sweeps, else `evaluation`."""
    seed_skip: int = 0
    """Seeds start after the set's first `seed_skip`: for a sweep whose runs must not share seeds with a
    sibling's (wallclock_curves' 104-108 beside wallclock_check's 101-103)."""
    interleave: bool = False
    """Run seed by seed (every cell's first seed, then every cell's second, ...) instead of cell by
    cell: for throughput sweeps, so a slow spell of the machine (+-30% over minutes here) falls on
    one seed of many cells, which the per-cell median rejects, not on every seed of one cell."""
    experiment: str = "train"
    """The Sacred experiment each run is: `train` (experiments/train.py) or `timing`
    (experiments/timing.py, one gradient step timed)."""
    cells_from: str = ""
    """A committed file the cells are read from (plan_validation: its predictions, written before its
    runs), relative to the checkout: a run into results/reference/ is refused while it differs from HEAD."""
    not_ready: str = ""
    """Why the sweep cannot run yet, in one line ("" when it can): with its `cells_from` not written,
    it has no cells, and this names the command that writes them."""
