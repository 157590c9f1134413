"""Named sweeps as data: a grid of config overrides x seeds, a description, a time estimate.

Each grid cell is (named configs, config overrides); the runner crosses it with the seeds and
gives every run a deterministic id from its config, so a restarted sweep knows what is done.
Budgets come in two scales: `small` (this 2-core machine, minutes to an hour) and `paper`
(the writeup's numbers, hours). Cells naming an architecture that has not landed yet are
listed and skipped until it does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from architectures.core.config import DQNConfig
from architectures.registry import NAMES, PARALLEL
from experiments.configs import NAMED_CONFIGS

SCALES = ("small", "paper")

RUNS_AT_ONCE_ENV = "DQN_RUNS_AT_ONCE"
"""How many runs a sweep ran at once beside each other (`--jobs`), passed to each run in this
environment variable: experiments/train.py stores it with the result (`runs_at_once`), and the
report quotes speeds only from runs made one at a time."""

SEED_SETS: dict[str, tuple[int, ...]] = {
    "calibration": (1, 2, 3, 4, 5),
    "evaluation": tuple(range(101, 111)),
}
"""Named, disjoint seed sets. Configs are tuned on `calibration` seeds and every number in the
writeup comes from `evaluation` seeds: a config tuned and quoted on the same seeds overstates
it (the cartpole config reached the 500 cap on 10 of 10 of its tuning seeds, 3 of 5 fresh ones).
A sweep names the set it draws from; `--seeds N` takes the set's first N."""


@dataclass(frozen=True)
class Cell:
    named: tuple[str, ...]
    """Named configs applied first, in order (experiments/configs.py)."""
    updates: dict
    """Config overrides applied after them."""
    experiment: str | None = None
    """This cell's experiment when it is not the sweep's (`components`: the component costs the
    cost model predicts from, measured beside the runs it predicts)."""


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
    interleave: bool = False
    """Run seed by seed (every cell's first seed, then every cell's second, ...) instead of cell by
    cell: for throughput sweeps, so a slow spell of the machine (+-30% over minutes here) falls on
    one seed of many cells, which the per-cell median rejects, not on every seed of one cell."""
    experiment: str = "train"
    """The Sacred experiment each run is: `train` (experiments/train.py) or `timing`
    (experiments/timing.py, one gradient step timed)."""


def _grid(named_list, updates_list) -> list[Cell]:
    return [Cell(tuple(named), dict(updates)) for named in named_list for updates in updates_list]


_TINY = dict(total_env_steps=5_000, eval_every=2_500, eval_episodes=3, learning_starts=500, log_every=1_000,
             eps_decay_steps=2_000, buffer_size=5_000)
_SLOW = dict(num_workers=2, slow_worker_cost_us=1_000.0)
"""Uneven workers: worker 0's env steps cost 1 ms more (CartPole's own step is ~15 us)."""
_ARCHS = NAMES  # every design: the smoke sweep and the headlines run each one
_NO_EVAL = dict(eval_episodes=0, log_every=5_000)


def _scaling(steps_by_cost: dict[float, int], workers: list[int], env: str = "cartpole",
             high_utd: dict | None = None) -> list[Cell]:
    """Every design against workers at each env step cost, with the components; and, at a free env
    step, high_utd at the headline's ratio (`high_utd`), so the headline's speeds all come from
    runs made one at a time (its learning runs go two at a time). high_utd gets a third of the
    budget, but at least as many env steps of learning as of warm-up: its 6,666 steps on MinAtar
    were three quarters warm-up, which the headline's speed (once learning) cannot be read from."""
    warm_up = NAMED_CONFIGS[env].get("learning_starts", DQNConfig.learning_starts)
    cells = []
    for cost, steps in steps_by_cost.items():
        budget = dict(_NO_EVAL, env_step_cost_us=cost, total_env_steps=steps, eval_every=steps)
        cells.append(Cell((env, "single_env"), dict(budget)))
        if high_utd and cost == 0:
            short = max(steps // 3, 2 * warm_up)
            cells.append(Cell((env, "high_utd"), dict(budget, **high_utd, total_env_steps=short, eval_every=short)))
        cells.append(Cell((env,), dict(budget), experiment="components"))  # the cost model's inputs
        for arch in PARALLEL:
            cells += [Cell((env, arch), dict(budget, num_workers=n)) for n in workers]
    return cells


SHAPE_WORKERS = (1, 2, 4, 8, 12, 16)


CHECK_WORKERS = {"actor_learner": (2, 8, 16, 24), "vector_env": (4, 12), "hogwild": (4, 12)}
"""The shape's second, out-of-sample check (`shape_check`): past the first table's worker counts."""


SPEED_WORKERS = {"busy": {"actor_learner": 2, "vector_env": 2, "hogwild": 2, "pqn": 2},
                 "waiting": {"actor_learner": 16, "vector_env": 8, "hogwild": 8, "pqn": 8}}
"""`speed`: each parallel design at one count per setting: the cores where the env's step is busy CPU,
and where it waits (the practitioner's shape), the count its earlier runs here put near its best."""


def _speed(busy_steps: int, waiting_steps: int) -> list[Cell]:
    """The answer's speeds on this machine: single_env and each parallel design (SPEED_WORKERS) on
    CartPole whose step burns 1 ms of CPU, and on the practitioner's shape (a 2.2 ms wait),
    evaluation off, one at a time, seed by seed."""
    cells = []
    for setting, named, steps, extra in (("busy", "cartpole", busy_steps, {"env_step_cost_us": 1_000.0}),
                                         ("waiting", "practitioner_shape", waiting_steps, {})):
        budget = dict(_NO_EVAL, **extra, total_env_steps=steps, eval_every=steps, worker_timeout_s=120.0)
        cells.append(Cell((named, "single_env"), dict(budget)))
        cells += [Cell((named, arch), dict(budget, num_workers=n)) for arch, n in SPEED_WORKERS[setting].items()]
    return cells


OWN_WAIT_WORKERS = {"actor_learner": (2, 4, 8, 16, 24), "vector_env": (4, 8), "hogwild": (4, 8)}
"""`own_wait`: a user env that blocks on another process, its wait told by plan with no config key."""


CONFIRM_WORKERS = {"actor_learner": (4, 12, 16, 32), "vector_env": (8,), "hogwild": (8, 16)}
"""The shape's third check (`shape_confirm`): plan's recommendation where the env waits (actor_learner
12, bound by the cores at the CPU its runs paid) and runner-up (hogwild 8), beside counts the
second check did not run, each predicted before its runs (results/reference/shape_confirm)."""


PER_HOUR = {"single_env": (1, 45_000), "actor_learner": (16, 240_000), "vector_env": (12, 200_000),
            "hogwild": (12, 210_000)}
"""Learning per hour (`per_hour`): each design at its best worker count in shape_check (actor_learner
16, vector_env and hogwild 12), and env steps for about 140-160 training seconds: single_env made
324 env steps/s here (45k in 139 s) and actor_learner (16) 1,530 (a first run, stopped at 106k);
the others' budgets are guesses with a margin (a run that ends early shortens the compared window
for all, one that ends late costs only machine time)."""


def _per_hour(seconds_scale: float = 1.0) -> list[Cell]:
    cells = []
    for arch, (n, steps) in PER_HOUR.items():
        steps = int(steps * seconds_scale)
        cells.append(Cell(("minatar_breakout_wait", arch), dict(num_workers=n, total_env_steps=steps,
                                                                eval_every=steps // 10, eval_episodes=10,
                                                                worker_timeout_s=120.0)))
    return cells


def _shape(steps: int, workers: dict[str, tuple[int, ...]] | None = None, named: str = "practitioner_shape") -> list[Cell]:
    """The practitioner's shape (a 2.2 ms env step that waits, a ~0.6 ms update at utd 0.25):
    single_env and each parallel design at its worker counts in `workers` (every design at
    SHAPE_WORKERS by default; CHECK_WORKERS for `shape_check`), evaluation off, one at a time."""
    workers = workers or {arch: SHAPE_WORKERS for arch in ("actor_learner", "vector_env", "hogwild")}
    budget = dict(_NO_EVAL, total_env_steps=steps, eval_every=steps, worker_timeout_s=120.0)
    return [Cell((named, "single_env"), dict(budget))] + [
        Cell((named, arch), dict(budget, num_workers=n)) for arch, counts in workers.items() for n in counts]


def _vector_check(busy_steps: int, wait_steps: int, pqn_steps: dict[str, int]) -> list[Cell]:
    """Issue 34's speed checks, each against a prediction committed before its runs: vector_env at 2
    envs on a 1 ms busy CartPole step beside single_env and actor_learner; vector_env and
    actor_learner at 4 and 8 on a CartPole step that waits 2 ms (the practitioner's learner); pqn
    at 1-4 envs on a free CartPole step and 1-2 on MinAtar Breakout. Evaluation off, one at a time."""
    busy = dict(_NO_EVAL, env_step_cost_us=1000.0, total_env_steps=busy_steps, eval_every=busy_steps)
    wait = dict(_NO_EVAL, env_step_wait_us=2000.0, total_env_steps=wait_steps, eval_every=wait_steps,
                worker_timeout_s=120.0)
    cells = [Cell(("cartpole", "single_env"), dict(busy))]
    cells += [Cell(("cartpole", arch), dict(busy, num_workers=2)) for arch in ("vector_env", "actor_learner")]
    cells += [Cell(("practitioner_shape", arch), dict(wait, num_workers=n))
              for arch in ("vector_env", "actor_learner") for n in (4, 8)]
    for env, counts in (("cartpole", (1, 2, 4)), ("minatar_breakout_cpu", (1, 2))):
        steps = pqn_steps[env]
        cells += [Cell((env, "pqn"), dict(_NO_EVAL, total_env_steps=steps, eval_every=steps, num_workers=n))
                  for n in counts]
    return cells


# high_utd in the headline runs at the utd grid's steadiest high ratio: 4 updates per env step
# with LayerNorm (at the baseline ratio it would be single_env, bit for bit).
HEADLINE_HIGH_UTD = {"utd": 4.0, "layer_norm": True}


def _headline(env: str, high_utd: dict = HEADLINE_HIGH_UTD, **budget) -> list[Cell]:
    return [Cell((env, a), dict(high_utd, **budget) if a == "high_utd" else dict(budget)) for a in _ARCHS]


# MinAtar's conv update costs ~1.1 ms here, so high_utd runs at 1 update per env step (4x the
# others): at utd 4, 500k env steps would be 2M updates, ~40 min a run alone.
MINATAR_HIGH_UTD = {"utd": 1.0, "layer_norm": True}
MINATAR_HEADLINE_STEPS = 500_000
"""The MinAtar headline's budget: 5 designs x 5 seeds at 1M env steps would take ~6 h of this
2-core machine two runs at a time; 500k fits about 3 h."""


MINATAR_GAMES = ("Asterix", "Freeway", "SpaceInvaders", "Seaquest")
"""The MinAtar suite beside Breakout (whose cells are the `minatar` sweep's)."""


def _minatar_suite(steps: int) -> list[Cell]:
    """Each game in MINATAR_GAMES with the calibrated values (`minatar_cpu`), single_env and the three
    parallel designs at their default 2 workers; high_utd stays at its Breakout cell (~40 min a run
    alone at utd 1)."""
    return [Cell(("minatar_cpu", arch), {"env_id": f"MinAtar/{game}-v1", "total_env_steps": steps})
            for game in MINATAR_GAMES for arch in ("single_env", "actor_learner", "vector_env", "hogwild")]


def _reset_period(utd: float) -> int:
    """Resets every 10k env steps' worth of updates, whatever the ratio: a first try with a fixed
    2,000 updates reset CartPole's output layer every 500 env steps at utd 4 and wrecked it."""
    return int(10_000 * utd)


def _utd_grid(steps: int) -> list[Cell]:
    def mitigations(utd: float) -> dict[str, dict]:
        period = _reset_period(utd)
        return {"none": {}, "layer_norm": {"layer_norm": True}, "resets": {"reset_period": period},
                "both": {"layer_norm": True, "reset_period": period}}

    # single_env at its utd 0.25, same budget and checkpoints: the reference every cell is read against.
    return [Cell(("cartpole", "single_env"), dict(total_env_steps=steps, eval_every=5_000))] + [
        Cell(("cartpole", "high_utd"), dict(utd=utd, total_env_steps=steps, eval_every=5_000, **m))
        for utd in (1.0, 4.0, 16.0) for m in mitigations(utd).values()]


UTD_LONG_STEPS = 100_000
"""The utd sweep's long cells (`_utd_long`): the headline's budget, past the 50k at which the grid stops,
where high_utd at utd 4 with LayerNorm solves CartPole and then falls (the stability table)."""


def _utd_long() -> list[Cell]:
    """single_env, high_utd at the headline's utd 4 with LayerNorm, and that with resets of the last
    layer or of the whole network every 10k env steps' worth of updates (Nikishin et al. reset the last
    layers, D'Oro et al. the whole network): do resets keep it from falling after it solves? Holdout every
    5k, as the grid. The reset period is the grid's, not chosen again: no tuning on evaluation seeds."""
    budget = dict(total_env_steps=UTD_LONG_STEPS, eval_every=5_000)
    period = _reset_period(HEADLINE_HIGH_UTD["utd"])
    return [Cell(("cartpole", "single_env"), dict(budget)), Cell(("cartpole", "high_utd"), dict(budget, **HEADLINE_HIGH_UTD))] + [
        Cell(("cartpole", "high_utd"), dict(budget, **HEADLINE_HIGH_UTD, reset_period=period, reset_layers=layers))
        for layers in ("last", "all")]


_NETWORKS = ("cartpole_mlp", "minatar_conv", "wide_mlp")
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _timing_grid(budget: dict, **axes) -> list[Cell]:
    cells = [dict(budget)]
    for key, values in axes.items():
        cells = [dict(c, **{key: v}) for c in cells for v in values]
    return [Cell((), c) for c in cells]


def _calibration(env: str, steps: int, grid: dict[str, tuple], target_env_steps: int = 1_000) -> list[Cell]:
    """single_env on `env` over the grid (which must include utd). The target period is held in
    env steps (1,000 env steps at every utd: Young & Tian's 1,000 updates at utd 1), and each run
    checkpoints so a long calibration survives the end of a working session."""
    cells = [{}]
    for key, values in grid.items():
        cells = [dict(c, **{key: v}) for c in cells for v in values]
    return [Cell((env, "single_env"), dict(c, total_env_steps=steps, checkpoint_every=100_000,
                                           target_update_period=int(target_env_steps * c["utd"])))
            for c in cells]


SWEEPS: dict[str, Sweep] = {s.name: s for s in [
    Sweep("smoke", "every landed architecture on CartPole with tiny budgets: checks the whole pipeline",
          minutes={"small": 1.5, "paper": 1.5},
          cells={scale: [Cell(("cartpole", arch), dict(_TINY, **(HEADLINE_HIGH_UTD if arch == "high_utd" else {})))
                         for arch in _ARCHS] for scale in SCALES}),
    # MinAtar is paper scale only: its conv update takes ~2.5 ms here (threads sweep, batch 32), so a
    # 100k-step Breakout run needs ~4 min of updates at utd 1 and ~16 min at utd 4 (estimates, not
    # run): 5 architectures x 3 seeds would not fit a small sweep.
    Sweep("architectures", "the headline: every architecture at equal env steps, holdout curves and "
          "throughput in the same runs, on CartPole (and MinAtar Breakout at paper scale)",
          minutes={"small": 35, "paper": 900},
          cells={"small": _headline("cartpole"),
                 "paper": _headline("cartpole") + _headline("minatar_breakout_cpu", MINATAR_HIGH_UTD)},
          seeds={"small": 3, "paper": 10}),
    Sweep("minatar", "the MinAtar headline: every design on Breakout at 500k env steps with the config chosen on "
          "calibration seeds (minatar_breakout_cpu), learning only (two at a time: --jobs 2); its speeds "
          "come from the scaling sweep's MinAtar cells",
          minutes={"small": 180, "paper": 600},
          cells={"small": _headline("minatar_breakout_cpu", MINATAR_HIGH_UTD, total_env_steps=MINATAR_HEADLINE_STEPS),
                 "paper": _headline("minatar_breakout_cpu", MINATAR_HIGH_UTD)},
          seeds={"small": 5, "paper": 10}),
    Sweep("minatar_suite", "the MinAtar suite beside Breakout: Asterix, Freeway, Space Invaders and Seaquest at "
          "500k env steps, single_env, actor_learner, vector_env and hogwild, one hyperparameter set for every game "
          "(minatar_cpu: Breakout's calibrated values), learning only (two at a time: --jobs 2 --nice; about 7.5 hours)",
          # small: its first 8 runs took ~11.5 min each two at a time on this 2-core machine (80 runs ~ 460 min)
          minutes={"small": 460, "paper": 920},
          cells={"small": _minatar_suite(MINATAR_HEADLINE_STEPS), "paper": _minatar_suite(1_000_000)},
          seeds={"small": 5, "paper": 10}),
    Sweep("pqn", "pqn on CartPole at CleanRL's budget (500k env steps, epsilon 1 -> 0.05 over the first half): "
          "the budget chosen on calibration seeds 1-5 (results/calibration/pqn_cartpole: 5 of 5 ended at 482-500 "
          "at 500k, 1 of 5 at 100k), reported on evaluation seeds; learning only (two at a time: --jobs 2 --nice). "
          "Its Breakout cells are the `minatar` sweep's, its speeds the `scaling` sweep's",
          # small: its 10 runs took ~20 min two at a time here (part of it beside the test suite)
          minutes={"small": 20, "paper": 20},
          cells={scale: [Cell(("cartpole", "pqn"), dict(total_env_steps=500_000, eps_decay_steps=250_000,
                                                        eval_every=25_000))] for scale in SCALES},
          seeds={"small": 10, "paper": 10}),
    Sweep("scaling", "env steps/s and updates/s against workers at utd 0.25, cheap and 1 ms env steps (and "
          "MinAtar Breakout), with each setting's components measured for the cost model",
          minutes={"small": 16, "paper": 120},  # small: its CartPole cells at 3 seeds took 28 min here
          cells={"small": _scaling({0.0: 30_000, 1000.0: 10_000}, [1, 2, 3, 4], high_utd=HEADLINE_HIGH_UTD)
                 + _scaling({0.0: 20_000}, [1, 2], env="minatar_breakout_cpu", high_utd=MINATAR_HIGH_UTD),
                 "paper": _scaling({0.0: 100_000, 1000.0: 30_000}, [1, 2, 3, 4, 6, 8], high_utd=HEADLINE_HIGH_UTD)
                 + _scaling({0.0: 50_000}, [1, 2, 4], env="minatar_breakout_cpu", high_utd=MINATAR_HIGH_UTD)},
          interleave=True),
    Sweep("seed_shape", "the practitioner's shape, many workers on an env that waits: single_env, and "
          "actor_learner, vector_env and hogwild at 1, 2, 4, 8, 12 and 16 workers, CartPole whose step waits "
          "2.2 ms without CPU, the cartpole learner at batch 32 (update ~0.6 ms) at utd 0.25; throughput only, one at a time, "
          "against the cost model's predictions committed before the runs (results/reference/seed_shape/predicted.md)",
          minutes={"small": 25, "paper": 70},
          cells={"small": _shape(12_000), "paper": _shape(40_000)},
          seeds={"small": 3, "paper": 3}, interleave=True),
    Sweep("shape_check", "the cost model's second prediction for the practitioner's shape, out of sample: "
          "with the waiting loop's update (in_loop_waiting), the training clock stopped before the teardown and "
          "the actors below the learner's priority (actor_nice), single_env, actor_learner at 2, 8, 16 and 24 "
          "actors, vector_env and hogwild at 4 and 12, against predictions committed before the runs "
          "(results/reference/shape_check/predicted.md)",
          minutes={"small": 12, "paper": 30},
          cells={"small": _shape(12_000, CHECK_WORKERS), "paper": _shape(40_000, CHECK_WORKERS)},
          seeds={"small": 2, "paper": 3}, interleave=True),
    Sweep("shape_confirm", "the cost model's third prediction for the practitioner's shape, out of sample: with "
          "each role's CPU past the cores as actor_learner's own runs paid it (components at 8 and 24 actors), "
          "plan's recommendation (actor_learner 12) and runner-up (hogwild 8) and counts no earlier check ran "
          "(actor_learner 4, 16, 32; vector_env 8; hogwild 16), against predictions committed before the runs "
          "(results/reference/shape_confirm/predicted.md)",
          minutes={"small": 12, "paper": 30},
          cells={"small": _shape(20_000, CONFIRM_WORKERS), "paper": _shape(60_000, CONFIRM_WORKERS)},
          seeds={"small": 2, "paper": 3}, interleave=True),
    Sweep("speed", "the answer's speeds on a 2-core machine, each cell run 7 times, one at a time, seed by seed: "
          "single_env and actor_learner, vector_env, hogwild and pqn at 2 workers on CartPole whose step burns 1 ms "
          "of CPU, and at 16, 8, 8 and 8 on the practitioner's shape (an env step that waits 2.2 ms); evaluation off. "
          "Enough runs a cell that a rank test corrected over its family can tell designs apart",
          minutes={"small": 25, "paper": 60},
          cells={"small": _speed(10_000, 12_000), "paper": _speed(30_000, 40_000)},
          seeds={"small": 7, "paper": 10}, interleave=True),
    Sweep("own_wait", "a user env whose step blocks ~3 ms on another process (tests.remote_envs:RemoteCartPole-v0) "
          "and no config key saying so: single_env, actor_learner at 2-24 actors, vector_env and hogwild at 4 and 8, "
          "throughput only, one at a time, against plan's predictions committed before the runs "
          "(results/reference/own_wait/predicted.md)",
          minutes={"small": 12, "paper": 30},
          cells={"small": _shape(12_000, OWN_WAIT_WORKERS, "remote_cartpole"),
                 "paper": _shape(40_000, OWN_WAIT_WORKERS, "remote_cartpole")},
          seeds={"small": 3, "paper": 3}, interleave=True),
    Sweep("vector_check", "vector_env and pqn stepping their envs as each is ready, through shared "
          "memory, against predictions committed before the runs (results/reference/vector_check/predicted): "
          "vector_env 2 beside single_env and actor_learner 2 at a 1 ms busy CartPole step, vector_env and "
          "actor_learner at 4 and 8 where the step waits 2 ms, pqn at 1-4 envs on CartPole and 1-2 on MinAtar "
          "Breakout; throughput only, one at a time, seed by seed",
          minutes={"small": 45, "paper": 120},
          cells={"small": _vector_check(20_000, 20_000, {"cartpole": 30_000, "minatar_breakout_cpu": 20_000}),
                 "paper": _vector_check(60_000, 60_000, {"cartpole": 100_000, "minatar_breakout_cpu": 50_000})},
          seeds={"small": 5, "paper": 5}, interleave=True),
    Sweep("per_hour", "learning per hour, the practitioner's question: MinAtar Breakout whose step waits 2 ms "
          "without CPU, single_env and actor_learner (16), vector_env (12) and hogwild (12) for about 140 training "
          "seconds each (the paper scale: 10 times longer), holdout at 10 checkpoints with their training seconds; one "
          "run at a time, seed by seed (the seconds are the measurement)",
          minutes={"small": 60, "paper": 480},
          cells={"small": _per_hour(), "paper": _per_hour(10.0)},
          seeds={"small": 5, "paper": 5}, interleave=True),
    Sweep("utd", "high_utd: utd 1, 4, 16 x mitigations none, LayerNorm, resets, both on CartPole at 50k; and at "
          "100k single_env, utd 4 with LayerNorm, and that with last-layer or full-network resets",
          # small: the grid took ~4 h two at a time; its long cells ~1 h more (three utd 4 cells of ~12 min a run)
          minutes={"small": 300, "paper": 600},
          cells={"small": _utd_grid(50_000) + _utd_long(), "paper": _utd_grid(100_000)},
          seeds={"small": 3, "paper": 5}),
    Sweep("hogwild", "hogwild with and without the lock at 2 workers, beside single_env and actor_learner",
          minutes={"small": 20, "paper": 60},
          cells={scale: [Cell(("cartpole", "hogwild"), {"num_workers": 2, "hogwild_lock": lock})
                         for lock in (False, True)]
                 + [Cell(("cartpole", "single_env"), {}), Cell(("cartpole", "actor_learner"), {"num_workers": 2})]
                 for scale in SCALES},
          seeds={"small": 3, "paper": 5}),
    Sweep("apex_epsilons", "Ape-X's fixed per-actor epsilons (0.4 ** (1 + 7 i / 7), actor_epsilons=apex) against the "
          "one decaying schedule every actor shares, actor_learner at 8 actors on CartPole, 100k env steps, "
          "evaluation seeds; learning only (two at a time: --jobs 2 --nice)",
          minutes={"small": 25, "paper": 50},
          cells={scale: [Cell(("cartpole", "actor_learner"), {"num_workers": 8, "actor_epsilons": eps})
                         for eps in ("schedule", "apex")] for scale in SCALES},
          seeds={"small": 10, "paper": 10}),
    Sweep("threads", "time per gradient step against torch threads 1..cores, per network and batch size "
          "(median over many updates after warm-up)",
          minutes={"small": 2 + 0.1 * 9 * _CORES, "paper": 5 + 0.5 * 9 * _CORES},
          cells={"small": _timing_grid(dict(updates=300, warmup=50), network=_NETWORKS, batch_size=(32, 128, 512),
                                       torch_threads=tuple(range(1, _CORES + 1))),
                 "paper": _timing_grid(dict(updates=2_000, warmup=200), network=_NETWORKS,
                                       batch_size=(32, 128, 512), torch_threads=tuple(range(1, _CORES + 1)))},
          experiment="timing"),
    Sweep("device", "time per gradient step on CPU against CUDA, per network and batch size: the CPU's update, "
          "and on CUDA the host-batch update (a copy in and a read back per update), the device update (replay on "
          "the GPU, nothing read back) and that as one CUDA graph; the CUDA runs are skipped where CUDA is absent",
          minutes={"small": 4, "paper": 12},
          cells={scale: [c for c in _timing_grid(dict(updates=300 if scale == "small" else 2_000, warmup=50),
                                                 network=_NETWORKS, batch_size=(32, 128, 512),
                                                 device=("cpu", "cuda"), update_path=("host", "device", "graph"))
                         if c.updates["device"] == "cuda" or c.updates["update_path"] == "host"]
                 for scale in SCALES},
          experiment="timing"),
    Sweep("uneven", "one slow worker among two (+1 ms per env step for worker 0): actor_learner with equal "
          "quotas and free-running, vector_env and hogwild, beside single_env, on CartPole",
          minutes={"small": 5 * 6, "paper": 10 * 6},
          cells={scale: [Cell(("cartpole", "actor_learner"), {**_SLOW, "actor_quotas": q}) for q in ("equal", "free")]
                 + [Cell(("cartpole", arch), dict(_SLOW)) for arch in ("vector_env", "hogwild")]
                 + [Cell(("cartpole", "single_env"), {})] for scale in SCALES},
          seeds={"small": 5, "paper": 10}),
    # Tuning runs on calibration seeds only: their numbers choose a config and are never quoted as
    # results. Stage one (small) holds utd at 0.25, where a 1M-step run takes ~15 min here; the
    # paper scale adds utd 1 (~37 min a run: the conv update measured 2.7 ms on this host).
    Sweep("calibrate_breakout", "single_env on MinAtar Breakout at 1M env steps over n-step x learning rate "
          "(x utd at paper scale), on calibration seeds: chooses the minatar_breakout config",
          minutes={"small": 4 * 2 * 15, "paper": 4 * 3 * 15 + 4 * 3 * 37},
          cells={"small": _calibration("minatar_breakout", 1_000_000,
                                       {"utd": (0.25,), "n_step": (1, 3), "lr": (2.5e-4, 1e-3)}),
                 "paper": _calibration("minatar_breakout", 1_000_000,
                                       {"utd": (0.25, 1.0), "n_step": (1, 3), "lr": (2.5e-4, 1e-3)})},
          seeds={"small": 2, "paper": 3}, seed_set="calibration"),
]}
