"""The grids of the named sweeps, study by study: each builds the Cells one study runs (scaling,
the practitioner's shape and its checks, speed, learning per hour, utd, MinAtar, timing,
calibration) with the budgets and worker counts it was sized to; experiments/sweeps/catalog.py names them."""

from __future__ import annotations

import hashlib
import json
import os

from architectures.core.config import DQNConfig
from architectures.registry import NAMES, PARALLEL
from experiments.tracking.configs import NAMED_CONFIGS
from experiments.sweeps.spec import Cell

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout

TINY = dict(total_env_steps=5_000, eval_every=2_500, eval_episodes=3, learning_starts=500, log_every=1_000,
             eps_decay_steps=2_000, buffer_size=5_000)
SLOW = dict(num_workers=2, slow_worker_cost_us=1_000.0)
"""Uneven workers: worker 0's env steps cost 1 ms more (CartPole's own step is ~15 us)."""
ARCHS = NAMES  # every design: the smoke sweep and the headlines run each one
_NO_EVAL = dict(eval_episodes=0, log_every=5_000)


def scaling(steps_by_cost: dict[float, int], workers: list[int], env: str = "cartpole",
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


def speed(busy_steps: int, waiting_steps: int) -> list[Cell]:
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


STEADY_WORKERS = {"busy": {"actor_learner": (2,), "vector_env": (2,), "hogwild": (2,), "pqn": (2,)},
                  "waiting": {"actor_learner": (16,), "vector_env": (8, 16), "hogwild": (8, 16), "pqn": (8, 16)}}
"""`speed`'s counts: the cores where the step is busy CPU; where it waits, every design at 16 (the
practitioner's count, which the per-wall-clock composition at 16 workers reads) and at the 8 the
earlier runs here put near vector_env's, hogwild's and pqn's best."""
STEADY_STEPS = {"busy": {"single_env": 55_000, "actor_learner": 100_000, "vector_env": 80_000, "hogwild": 110_000,
                         "pqn": 95_000},
                "waiting": {"single_env": 30_000, "actor_learner": 360_000, "vector_env": 230_000, "hogwild": 330_000,
                            "pqn": 400_000}}
"""Each cell's env steps for at least 60 s of learning run alone on 2 cores: the earlier `speed` runs'
whole-run rates here (busy: single_env 714, vector_env 991, pqn 1,204, actor_learner 1,277, hogwild
1,414 env steps/s; waiting: single_env 369, pqn (8) 2,534, hogwild (8) 2,733, vector_env (8) 2,970,
actor_learner (16) 4,766; medians of 7) times about 75 s, the 16-worker cells scaled as scale_cartpole's
16 to 8 ratio, rounded up. A budget, not a measurement: a run's own learning seconds are recorded."""


def steady_speed() -> list[Cell]:
    """The reference speeds (`speed`): `speed`'s two settings with each run long enough to reach steady
    state (STEADY_STEPS: at least 60 s of learning) and every design at 16 workers where the step
    waits; evaluation off, one at a time, seed by seed."""
    cells = []
    for setting, named, extra in (("busy", "cartpole", {"env_step_cost_us": 1_000.0}),
                                  ("waiting", "practitioner_shape", {})):
        for arch in ("single_env", *STEADY_WORKERS[setting]):
            steps = STEADY_STEPS[setting][arch]
            budget = dict(_NO_EVAL, **extra, total_env_steps=steps, eval_every=steps, worker_timeout_s=120.0)
            counts = STEADY_WORKERS[setting].get(arch, (None,))
            cells += [Cell((named, arch), dict(budget, **({} if n is None else {"num_workers": n}))) for n in counts]
    return cells


PLAN_VALIDATION = os.path.join("results", "reference", "plan_validation", "predictions.json")
"""plan_validation's cells, budgets and predictions, relative to the checkout: written and committed
before its runs by `python -m experiments.plan.validation predict` (docs/plan-validation.md)."""


def plan_validation(path: str = PLAN_VALIDATION) -> tuple[list[Cell], str]:
    """plan_validation's cells, each as its predictions say (its env, design, workers and budget: its warm-up and 80 s
    at its predicted speed), evaluation off as `speed`'s, its runs citing the predictions' commit and
    digest; and "". Where the predictions are not written (or cannot be read), no cells and why, in
    one line naming the command that writes them: a budget is never guessed."""
    try:
        with open(os.path.join(ROOT, path), "rb") as f:
            text = f.read()
        predictions = json.loads(text)
        meta = {"plan_predictions_commit": predictions["commit"],
                "plan_predictions_digest": hashlib.sha1(text).hexdigest()[:12]}
        cells = [_validation_cell(cell, meta) for cell in predictions["cells"]]
    except FileNotFoundError:
        return [], f"{path} is not written yet: run `python -m experiments.plan.validation predict` first"
    except (OSError, ValueError, KeyError, TypeError) as err:
        return [], (f"{path} cannot be read ({type(err).__name__}: {err}); write it again with "
                    "`python -m experiments.plan.validation predict`")
    if not meta["plan_predictions_commit"]:
        return [], f"{path} names no commit (written outside a git checkout?): its runs could not cite it"
    return cells, ""


def _validation_cell(cell: dict, meta: dict) -> Cell:
    """Evaluation off as `speed`'s runs have it, logging as the configs do (every 1,000 env steps): a
    10,000-step run logged every 5,000 would have its rate once learning read over its second half only."""
    steps = int(cell["total_env_steps"])
    budget = dict(eval_episodes=0, env_id=cell["env_id"], total_env_steps=steps, eval_every=steps,
                  worker_timeout_s=120.0)
    if cell["design"] != "single_env":
        budget["num_workers"] = int(cell["workers"])
    return Cell((cell["named_config"], cell["design"]), budget, meta=meta)


WALLCLOCK_STEPS = {"single_env": 250_000, "vector_env": 350_000, "actor_learner": 450_000, "hogwild": 500_000}
"""The composition's check (docs/learning-at-scale.md): each design's env steps for at least 5 minutes of
training at its `speed` rate on the 1 ms busy step at 2 workers (single_env 714, vector_env 991,
actor_learner 1,277, hogwild 1,414 env steps/s there, whole-run medians of 7 runs), rounded up."""


def wallclock() -> list[Cell]:
    """The composition's check at 2 workers on CartPole whose step burns 1 ms of CPU: each design's
    budget from WALLCLOCK_STEPS, holdout at every tenth (each checkpoint's training seconds recorded
    off the clock), the cartpole config otherwise; the same cells serve the learning curves (two at a
    time) and the measured runs (one at a time)."""
    cells = []
    for arch, steps in WALLCLOCK_STEPS.items():
        extra = {} if arch == "single_env" else {"num_workers": 2}
        cells.append(Cell(("cartpole", arch), dict(extra, env_step_cost_us=1_000.0, total_env_steps=steps,
                                                   eval_every=steps // 10, worker_timeout_s=120.0)))
    return cells


def tensorboard_cost(busy_steps: int, waiting_steps: int) -> list[Cell]:
    """Every `speed` cell twice, its event files on and off (docs/watching.md: they must cost no more than
    the runs' own spread), logging every 1,000 env steps as the named configs do (the speed cells
    log every 5,000, which would hide a writer's cost). Every other cell runs its files-off arm
    first, so an order effect shows as a difference between the two halves."""
    return [Cell(cell.named, dict(cell.updates, log_every=1_000, tensorboard=on))
            for i, cell in enumerate(speed(busy_steps, waiting_steps)) for on in ((True, False), (False, True))[i % 2]]


SCALE_WAIT_US = 2_200.0
"""The learning-at-scale sweeps' env step waits this long without CPU (the practitioner's 2.2 ms), so
that 8 and 16 actors on 2 cores act at the rate the learner allows instead of being starved for CPU:
the many-worker regime, emulated (what it leaves out: docs/learning-at-scale.md)."""
SCALE_DESIGNS = ("actor_learner", "hogwild", "vector_env", "pqn")
SCALE_MINATAR_GAMES = ("Breakout", "Freeway", "SpaceInvaders")
"""The three MinAtar games where single_env is clearly above the floor at 500k env steps (the suite)."""


def at_scale(named: str, workers: tuple[int, ...], **budget) -> list[Cell]:
    """Learning per env step at the practitioner's worker counts (docs/learning-at-scale.md): single_env and every
    parallel design at each count in `workers`, on one holdout grid. single_env runs without the
    wait: its loop steps, stores and updates in one fixed order whatever a step lasts, so the wait
    changes its seconds, not its learning (tests/test_at_scale.py holds that), and costs hours.
    pqn's rollout is 125 vector steps (CleanRL's 128 less 3), so that 8 or 16 envs end a rollout
    exactly on the holdout grid (1,000 or 2,000 env steps divide 10k and 50k) and every design is
    evaluated at the same env steps."""
    slack = dict(budget, worker_timeout_s=300.0)  # 17 processes a run, two runs on 2 cores
    cells = [Cell((named, "single_env"), dict(budget))]
    for n in workers:
        for arch in SCALE_DESIGNS:
            extra = {"rollout_steps": 125} if arch == "pqn" else {}
            cells.append(Cell((named, arch), dict(slack, env_step_wait_us=SCALE_WAIT_US, num_workers=n, **extra)))
    return cells


def scale_minatar(steps: int, workers: tuple[int, ...] = (16,)) -> list[Cell]:
    """`at_scale` on each of SCALE_MINATAR_GAMES with the suite's calibrated values (`minatar_cpu`)."""
    return [cell for game in SCALE_MINATAR_GAMES
            for cell in at_scale("minatar_cpu", workers, env_id=f"MinAtar/{game}-v1", total_env_steps=steps)]


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


def per_hour(seconds_scale: float = 1.0) -> list[Cell]:
    """The `per_hour` sweep's cells, each design's env steps scaled by `seconds_scale`."""
    cells = []
    for arch, (n, steps) in PER_HOUR.items():
        steps = int(steps * seconds_scale)
        cells.append(Cell(("minatar_breakout_wait", arch), dict(num_workers=n, total_env_steps=steps,
                                                                eval_every=steps // 10, eval_episodes=10,
                                                                worker_timeout_s=120.0)))
    return cells


def shape(steps: int, workers: dict[str, tuple[int, ...]] | None = None, named: str = "practitioner_shape") -> list[Cell]:
    """The practitioner's shape (a 2.2 ms env step that waits, a ~0.6 ms update at utd 0.25):
    single_env and each parallel design at its worker counts in `workers` (every design at
    SHAPE_WORKERS by default; CHECK_WORKERS for `shape_check`), evaluation off, one at a time."""
    workers = workers or {arch: SHAPE_WORKERS for arch in ("actor_learner", "vector_env", "hogwild")}
    budget = dict(_NO_EVAL, total_env_steps=steps, eval_every=steps, worker_timeout_s=120.0)
    return [Cell((named, "single_env"), dict(budget))] + [
        Cell((named, arch), dict(budget, num_workers=n)) for arch, counts in workers.items() for n in counts]


def vector_check(busy_steps: int, wait_steps: int, pqn_steps: dict[str, int]) -> list[Cell]:
    """The vector_check sweep's speed checks, each against a prediction committed before its runs: vector_env at 2
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


def headline(env: str, high_utd: dict = HEADLINE_HIGH_UTD, **budget) -> list[Cell]:
    """Every design in ARCHS on one named config, high_utd with its utd settings."""
    return [Cell((env, a), dict(high_utd, **budget) if a == "high_utd" else dict(budget)) for a in ARCHS]


# MinAtar's conv update costs ~1.1 ms here, so high_utd runs at 1 update per env step (4x the
# others): at utd 4, 500k env steps would be 2M updates, ~40 min a run alone.
MINATAR_HIGH_UTD = {"utd": 1.0, "layer_norm": True}
MINATAR_HEADLINE_STEPS = 500_000
"""The MinAtar headline's budget: 5 designs x 5 seeds at 1M env steps would take ~6 h of this
2-core machine two runs at a time; 500k fits about 3 h."""


MINATAR_GAMES = ("Asterix", "Freeway", "SpaceInvaders", "Seaquest")
"""The MinAtar suite beside Breakout (whose cells are the `minatar` sweep's)."""


def minatar_suite(steps: int) -> list[Cell]:
    """Each game in MINATAR_GAMES with the calibrated values (`minatar_cpu`), single_env and the three
    parallel designs at their default 2 workers; high_utd stays at its Breakout cell (~40 min a run
    alone at utd 1)."""
    return [Cell(("minatar_cpu", arch), {"env_id": f"MinAtar/{game}-v1", "total_env_steps": steps})
            for game in MINATAR_GAMES for arch in ("single_env", "actor_learner", "vector_env", "hogwild")]


def _reset_period(utd: float) -> int:
    """Resets every 10k env steps' worth of updates, whatever the ratio: a first try with a fixed
    2,000 updates reset CartPole's output layer every 500 env steps at utd 4 and wrecked it."""
    return int(10_000 * utd)


def utd_grid(steps: int) -> list[Cell]:
    """high_utd at each utd with each mitigation (none, LayerNorm, resets, both) at `steps` env steps."""
    def mitigations(utd: float) -> dict[str, dict]:
        period = _reset_period(utd)
        return {"none": {}, "layer_norm": {"layer_norm": True}, "resets": {"reset_period": period},
                "both": {"layer_norm": True, "reset_period": period}}

    # single_env at its utd 0.25, same budget and checkpoints: the reference every cell is read against.
    return [Cell(("cartpole", "single_env"), dict(total_env_steps=steps, eval_every=5_000))] + [
        Cell(("cartpole", "high_utd"), dict(utd=utd, total_env_steps=steps, eval_every=5_000, **m))
        for utd in (1.0, 4.0, 16.0) for m in mitigations(utd).values()]


UTD_LONG_STEPS = 100_000
"""The utd sweep's long cells (`utd_long`): the headline's budget, past the 50k at which the grid stops,
where high_utd at utd 4 with LayerNorm solves CartPole and then falls (the stability table)."""


def utd_long() -> list[Cell]:
    """single_env, high_utd at the headline's utd 4 with LayerNorm, and that with resets of the last
    layer or of the whole network every 10k env steps' worth of updates (Nikishin et al. reset the last
    layers, D'Oro et al. the whole network): do resets keep it from falling after it solves? Holdout every
    5k, as the grid. The reset period is the grid's, not chosen again: no tuning on evaluation seeds."""
    budget = dict(total_env_steps=UTD_LONG_STEPS, eval_every=5_000)
    period = _reset_period(HEADLINE_HIGH_UTD["utd"])
    return [Cell(("cartpole", "single_env"), dict(budget)), Cell(("cartpole", "high_utd"), dict(budget, **HEADLINE_HIGH_UTD))] + [
        Cell(("cartpole", "high_utd"), dict(budget, **HEADLINE_HIGH_UTD, reset_period=period, reset_layers=layers))
        for layers in ("last", "all")]


NETWORKS = ("cartpole_mlp", "minatar_conv", "wide_mlp")
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def timing_grid(budget: dict, **axes) -> list[Cell]:
    """One cell for every combination of the values in `axes`, on top of `budget`."""
    cells = [dict(budget)]
    for key, values in axes.items():
        cells = [dict(c, **{key: v}) for c in cells for v in values]
    return [Cell((), c) for c in cells]


def calibration(env: str, steps: int, grid: dict[str, tuple], target_env_steps: int = 1_000) -> list[Cell]:
    """single_env on `env` over the grid (which must include utd). The target period is held in
    env steps (1,000 env steps at every utd: Young & Tian's 1,000 updates at utd 1), and each run
    checkpoints so a long calibration survives the end of a working session."""
    cells = [{}]
    for key, values in grid.items():
        cells = [dict(c, **{key: v}) for c in cells for v in values]
    return [Cell((env, "single_env"), dict(c, total_env_steps=steps, checkpoint_every=100_000,
                                           target_update_period=int(target_env_steps * c["utd"])))
            for c in cells]
