"""Named sweeps as data: a grid of config overrides x seeds, a description, a time estimate.

Each grid cell is (named configs, config overrides); the runner crosses it with the seeds and
gives every run a deterministic id from its config, so a restarted sweep knows what is done.
Budgets come in two scales: `small` (this 2-core machine, minutes to an hour) and `paper`
(the writeup's numbers, hours). Cells naming a design that has not landed yet are
listed and skipped until it does. Cell and Sweep are in spec.py, each study's grid in
cells.py; both are re-exported here."""

from __future__ import annotations

from experiments.sweeps.cells import (steady_speed, ARCHS, CORES, NETWORKS, SLOW, TINY, CHECK_WORKERS, CONFIRM_WORKERS,
                                      HEADLINE_HIGH_UTD, MINATAR_HEADLINE_STEPS, MINATAR_HIGH_UTD,
                                      OWN_WAIT_WORKERS, PLAN_VALIDATION, calibration, headline, minatar_suite,
                                      per_hour, plan_validation,
                                      scale_minatar, at_scale, scaling, shape, speed, tensorboard_cost,
                                      timing_grid, utd_grid, utd_long, vector_check, wallclock)
from experiments.sweeps.cells import (MINATAR_GAMES, PER_HOUR, SHAPE_WORKERS, SPEED_WORKERS,  # noqa: F401
                                      UTD_LONG_STEPS)
from experiments.sweeps.spec import RUNS_AT_ONCE_ENV, SCALES, Cell, Sweep  # noqa: F401

SEED_SETS: dict[str, tuple[int, ...]] = {
    "calibration": (1, 2, 3, 4, 5),
    "evaluation": tuple(range(101, 111)),
}
"""Named, disjoint seed sets. Configs are tuned on `calibration` seeds and every number in the
writeup comes from `evaluation` seeds: a config tuned and quoted on the same seeds overstates
it (the cartpole config reached the 500 cap on 10 of 10 of its tuning seeds, 3 of 5 fresh ones).
A sweep names the set it draws from; `--seeds N` takes the set's first N."""

_VALIDATION_CELLS, _VALIDATION_NOT_READY = plan_validation()  # from the predictions committed before its runs


SWEEPS: dict[str, Sweep] = {s.name: s for s in [
    Sweep("smoke", "every landed design on CartPole with tiny budgets: checks the whole pipeline",
          minutes={"small": 1.5, "paper": 1.5},
          cells={scale: [Cell(("cartpole", arch), dict(TINY, **(HEADLINE_HIGH_UTD if arch == "high_utd" else {})))
                         for arch in ARCHS] for scale in SCALES}),
    # MinAtar is paper scale only: its conv update takes ~2.5 ms here (threads sweep, batch 32), so a
    # 100k-step Breakout run needs ~4 min of updates at utd 1 and ~16 min at utd 4 (estimates, not
    # run): 5 designs x 3 seeds would not fit a small sweep.
    Sweep("architectures", "the headline: every design at equal env steps, holdout curves and "
          "throughput in the same runs, on CartPole (and MinAtar Breakout at paper scale)",
          minutes={"small": 35, "paper": 900},
          cells={"small": headline("cartpole"),
                 "paper": headline("cartpole") + headline("minatar_breakout_cpu", MINATAR_HIGH_UTD)},
          seeds={"small": 3, "paper": 10}),
    Sweep("minatar", "the MinAtar headline: every design on Breakout at 500k env steps with the config chosen on "
          "calibration seeds (minatar_breakout_cpu), learning only (two at a time: --jobs 2); its speeds "
          "come from the scaling sweep's MinAtar cells",
          minutes={"small": 180, "paper": 600},
          cells={"small": headline("minatar_breakout_cpu", MINATAR_HIGH_UTD, total_env_steps=MINATAR_HEADLINE_STEPS),
                 "paper": headline("minatar_breakout_cpu", MINATAR_HIGH_UTD)},
          seeds={"small": 5, "paper": 10}),
    Sweep("minatar_suite", "the MinAtar suite beside Breakout: Asterix, Freeway, Space Invaders and Seaquest at "
          "500k env steps, single_env, actor_learner, vector_env and hogwild, one hyperparameter set for every game "
          "(minatar_cpu: Breakout's calibrated values), learning only (two at a time: --jobs 2 --nice; about 7.5 hours)",
          # small: its first 8 runs took ~11.5 min each two at a time on this 2-core machine (80 runs ~ 460 min)
          minutes={"small": 460, "paper": 920},
          cells={"small": minatar_suite(MINATAR_HEADLINE_STEPS), "paper": minatar_suite(1_000_000)},
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
          cells={"small": scaling({0.0: 30_000, 1000.0: 10_000}, [1, 2, 3, 4], high_utd=HEADLINE_HIGH_UTD)
                 + scaling({0.0: 20_000}, [1, 2], env="minatar_breakout_cpu", high_utd=MINATAR_HIGH_UTD),
                 "paper": scaling({0.0: 100_000, 1000.0: 30_000}, [1, 2, 3, 4, 6, 8], high_utd=HEADLINE_HIGH_UTD)
                 + scaling({0.0: 50_000}, [1, 2, 4], env="minatar_breakout_cpu", high_utd=MINATAR_HIGH_UTD)},
          interleave=True),
    Sweep("seed_shape", "the practitioner's shape, many workers on an env that waits: single_env, and "
          "actor_learner, vector_env and hogwild at 1, 2, 4, 8, 12 and 16 workers, CartPole whose step waits "
          "2.2 ms without CPU, the cartpole learner at batch 32 (update ~0.6 ms) at utd 0.25; throughput only, one at a time, "
          "against the cost model's predictions committed before the runs (results/reference/seed_shape/predicted.md)",
          minutes={"small": 25, "paper": 70},
          cells={"small": shape(12_000), "paper": shape(40_000)},
          seeds={"small": 3, "paper": 3}, interleave=True),
    Sweep("shape_check", "the cost model's second prediction for the practitioner's shape, out of sample: "
          "with the waiting loop's update (in_loop_waiting), the training clock stopped before the teardown and "
          "the actors below the learner's priority (actor_nice), single_env, actor_learner at 2, 8, 16 and 24 "
          "actors, vector_env and hogwild at 4 and 12, against predictions committed before the runs "
          "(results/reference/shape_check/predicted.md)",
          minutes={"small": 12, "paper": 30},
          cells={"small": shape(12_000, CHECK_WORKERS), "paper": shape(40_000, CHECK_WORKERS)},
          seeds={"small": 2, "paper": 3}, interleave=True),
    Sweep("shape_confirm", "the cost model's third prediction for the practitioner's shape, out of sample: with "
          "each role's CPU past the cores as actor_learner's own runs paid it (components at 8 and 24 actors), "
          "plan's recommendation (actor_learner 12) and runner-up (hogwild 8) and counts no earlier check ran "
          "(actor_learner 4, 16, 32; vector_env 8; hogwild 16), against predictions committed before the runs "
          "(results/reference/shape_confirm/predicted.md)",
          minutes={"small": 12, "paper": 30},
          cells={"small": shape(20_000, CONFIRM_WORKERS), "paper": shape(60_000, CONFIRM_WORKERS)},
          seeds={"small": 2, "paper": 3}, interleave=True),
    Sweep("speed", "the answer's speeds on a 2-core machine, each run long enough to reach steady state (at least "
          "60 s of learning), one at a time, seed by seed: single_env and actor_learner, vector_env, hogwild and pqn "
          "at 2 workers on CartPole whose step burns 1 ms of CPU, and on the practitioner's shape (an env step that "
          "waits 2.2 ms) every design at 16 workers and vector_env, hogwild and pqn at 8 too; evaluation off. The "
          "speed measure is the rate once learning starts",
          minutes={"small": 140, "paper": 200},  # 91 and 130 runs of ~90 s
          cells={scale: steady_speed() for scale in SCALES},
          # 7, not 5: the answer tests its 8 speed cells against single_env with the exact rank test, Holm over
          # the 8; at 5 v 5 the smallest two-sided p is 2/252 = 0.0079, 0.063 after Holm, so no cell could be
          # "faster" however far apart; 7 v 7: 2/3432, 0.005 after Holm (tests/test_sweep.py)
          seeds={"small": 7, "paper": 10}, interleave=True),
    Sweep("tensorboard_cost", "what writing TensorBoard event files while a run trains costs: the earlier, short `speed` cells "
          "with the files on and off, logging every 1,000 env steps, one run at a time, seed by seed (each seed a "
          "round of all 20), evaluation off; the paired on/off ratio against the off runs' own spread",
          minutes={"small": 40, "paper": 90},
          cells={"small": tensorboard_cost(10_000, 12_000), "paper": tensorboard_cost(30_000, 40_000)},
          seeds={"small": 5, "paper": 5}, interleave=True),
    Sweep("own_wait", "a user env whose step blocks ~3 ms on another process (tests.remote_envs:RemoteCartPole-v0) "
          "and no config key saying so: single_env, actor_learner at 2-24 actors, vector_env and hogwild at 4 and 8, "
          "throughput only, one at a time, against plan's predictions committed before the runs "
          "(results/reference/own_wait/predicted.md)",
          minutes={"small": 12, "paper": 30},
          cells={"small": shape(12_000, OWN_WAIT_WORKERS, "remote_cartpole"),
                 "paper": shape(40_000, OWN_WAIT_WORKERS, "remote_cartpole")},
          seeds={"small": 3, "paper": 3}, interleave=True),
    Sweep("vector_check", "vector_env and pqn stepping their envs as each is ready, through shared "
          "memory, against predictions committed before the runs (results/reference/vector_check/predicted): "
          "vector_env 2 beside single_env and actor_learner 2 at a 1 ms busy CartPole step, vector_env and "
          "actor_learner at 4 and 8 where the step waits 2 ms, pqn at 1-4 envs on CartPole and 1-2 on MinAtar "
          "Breakout; throughput only, one at a time, seed by seed",
          minutes={"small": 45, "paper": 120},
          cells={"small": vector_check(20_000, 20_000, {"cartpole": 30_000, "minatar_breakout_cpu": 20_000}),
                 "paper": vector_check(60_000, 60_000, {"cartpole": 100_000, "minatar_breakout_cpu": 50_000})},
          seeds={"small": 5, "paper": 5}, interleave=True),
    Sweep("plan_validation", "plan on envs it was not built on (docs/plan-validation.md, fixed before any "
          "prediction): single_env, and actor_learner, hogwild, vector_env and pqn at 2, 8 and 16 workers (2 only on "
          "the busy shapes), on CartPole in 8 step shapes hidden inside the env (experiments/plan/shapes.py) and "
          "MinAtar Breakout in 2; each run its warm-up and 80 s at plan's predicted speed (at least 10,000 env steps), read from "
          f"the predictions committed before the runs ({PLAN_VALIDATION}), which every run's result cites "
          "(cell_meta); evaluation off, one at a time, seed by seed",
          # 342 runs of ~85 s of training and ~10 s of start and teardown each (a budget, not a measurement)
          minutes={"small": 540, "paper": 540},
          cells={scale: _VALIDATION_CELLS for scale in SCALES},
          seeds={"small": 3, "paper": 3}, interleave=True, cells_from=PLAN_VALIDATION,
          not_ready=_VALIDATION_NOT_READY),
    Sweep("per_hour", "learning per hour, the practitioner's question: MinAtar Breakout whose step waits 2 ms "
          "without CPU, single_env and actor_learner (16), vector_env (12) and hogwild (12) for about 140 training "
          "seconds each (the paper scale: 10 times longer), holdout at 10 checkpoints with their training seconds; one "
          "run at a time, seed by seed (the seconds are the measurement)",
          minutes={"small": 60, "paper": 480},
          cells={"small": per_hour(), "paper": per_hour(10.0)},
          seeds={"small": 5, "paper": 5}, interleave=True),
    Sweep("scale_cartpole", "learning per env step at the practitioner's worker counts: single_env, and "
          "actor_learner, hogwild, vector_env and pqn at 8 and 16 workers on CartPole (the cartpole config, "
          "100k env steps, holdout every 10k for every design) whose step waits 2.2 ms without CPU (the "
          "many-worker regime on 2 cores; single_env without the wait, which does not change its learning); "
          "families and primary measure in docs/learning-at-scale.md, written before the runs; learning "
          "only (two at a time: --jobs 2 --nice)",
          minutes={"small": 90, "paper": 90},
          cells={scale: at_scale("cartpole", (8, 16)) for scale in SCALES},
          seeds={"small": 10, "paper": 10}, interleave=True),
    Sweep("scale_minatar", "learning per env step at 16 workers on MinAtar: single_env, and actor_learner, "
          "hogwild, vector_env and pqn at 16 on Breakout, Freeway and Space Invaders (minatar_cpu, 500k env "
          "steps, the suite's budget and holdout grid), the step waiting 2.2 ms without CPU (single_env "
          "without it); families in docs/learning-at-scale.md, written before the runs; learning only (two at "
          "a time: --jobs 2 --nice; resumable, each run checkpointed at every holdout)",
          minutes={"small": 600, "paper": 1200},
          cells={"small": scale_minatar(MINATAR_HEADLINE_STEPS), "paper": scale_minatar(MINATAR_HEADLINE_STEPS, (8, 16))},
          seeds={"small": 5, "paper": 5}, interleave=True),
    Sweep("wallclock_check", "the per-wall-clock composition's check (docs/learning-at-scale.md): single_env, and "
          "actor_learner, hogwild and vector_env at 2 workers, on CartPole whose step burns 1 ms of CPU, each for at "
          "least 5 minutes of training (250k-500k env steps), holdout at every tenth with its training seconds; one "
          "run at a time on an idle machine, seed by seed (the seconds are the measurement); seeds 101-103",
          minutes={"small": 80, "paper": 80},
          cells={scale: wallclock() for scale in SCALES},
          seeds={"small": 3, "paper": 3}, interleave=True),
    Sweep("wallclock_curves", "the per-env-step curves the composition reads beside wallclock_check: its cells at "
          "seeds 104-108, learning only (two at a time: --jobs 2 --nice)",
          minutes={"small": 110, "paper": 110},
          cells={scale: wallclock() for scale in SCALES},
          seeds={"small": 5, "paper": 5}, seed_skip=3, interleave=True),
    Sweep("utd", "high_utd: utd 1, 4, 16 x mitigations none, LayerNorm, resets, both on CartPole at 50k; and at "
          "100k single_env, utd 4 with LayerNorm, and that with last-layer or full-network resets",
          # small: the grid took ~4 h two at a time; its long cells ~1 h more (three utd 4 cells of ~12 min a run)
          minutes={"small": 300, "paper": 600},
          cells={"small": utd_grid(50_000) + utd_long(), "paper": utd_grid(100_000)},
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
          minutes={"small": 2 + 0.1 * 9 * CORES, "paper": 5 + 0.5 * 9 * CORES},
          cells={"small": timing_grid(dict(updates=300, warmup=50), network=NETWORKS, batch_size=(32, 128, 512),
                                       torch_threads=tuple(range(1, CORES + 1))),
                 "paper": timing_grid(dict(updates=2_000, warmup=200), network=NETWORKS,
                                       batch_size=(32, 128, 512), torch_threads=tuple(range(1, CORES + 1)))},
          experiment="timing"),
    Sweep("plain_learner", "the suite's CPU learner against a practitioner's: time per gradient step of the CartPole "
          "MLP with the hand-derived gradient and the fused Adam (the suite's), with autograd and the fused Adam, and "
          "with autograd and torch.optim.Adam's defaults, at batch 32 and 128; the MinAtar conv net (autograd either "
          "way) with each Adam at batch 32; one torch thread, one run at a time, seed by seed",
          minutes={"small": 6, "paper": 12},
          cells={scale: [Cell((), dict(updates=2_000 if scale == "small" else 5_000, warmup=200, network=network,
                                       batch_size=batch, torch_threads=1, mlp_fast_grad=fast, optimizer=optimizer))
                         for network, batches, kinds in (
                             ("cartpole_mlp", (32, 128), ((True, "fused"), (False, "fused"), (False, "torch"))),
                             ("minatar_conv", (32,), ((True, "fused"), (True, "torch"))))
                         for batch in batches for fast, optimizer in kinds]
                 for scale in SCALES},
          seeds={"small": 5, "paper": 5}, interleave=True, experiment="timing"),
    Sweep("device", "time per gradient step on CPU against CUDA, per network and batch size: the CPU's update, "
          "and on CUDA the host-batch update (a copy in and a read back per update), the device update (replay on "
          "the GPU, nothing read back) and that as one CUDA graph; the CUDA runs are skipped where CUDA is absent",
          minutes={"small": 4, "paper": 12},
          cells={scale: [c for c in timing_grid(dict(updates=300 if scale == "small" else 2_000, warmup=50),
                                                 network=NETWORKS, batch_size=(32, 128, 512),
                                                 device=("cpu", "cuda"), update_path=("host", "device", "graph"))
                         if c.updates["device"] == "cuda" or c.updates["update_path"] == "host"]
                 for scale in SCALES},
          experiment="timing"),
    Sweep("uneven", "one slow worker among two (+1 ms per env step for worker 0): actor_learner with equal "
          "quotas and free-running, vector_env and hogwild, beside single_env, on CartPole",
          minutes={"small": 5 * 6, "paper": 10 * 6},
          cells={scale: [Cell(("cartpole", "actor_learner"), {**SLOW, "actor_quotas": q}) for q in ("equal", "free")]
                 + [Cell(("cartpole", arch), dict(SLOW)) for arch in ("vector_env", "hogwild")]
                 + [Cell(("cartpole", "single_env"), {})] for scale in SCALES},
          seeds={"small": 5, "paper": 10}),
    # Tuning runs on calibration seeds only: their numbers choose a config and are never quoted as
    # results. Stage one (small) holds utd at 0.25, where a 1M-step run takes ~15 min here; the
    # paper scale adds utd 1 (~37 min a run: the conv update measured 2.7 ms on this host).
    Sweep("calibrate_breakout", "single_env on MinAtar Breakout at 1M env steps over n-step x learning rate "
          "(x utd at paper scale), on calibration seeds: chooses the minatar_breakout config",
          minutes={"small": 4 * 2 * 15, "paper": 4 * 3 * 15 + 4 * 3 * 37},
          cells={"small": calibration("minatar_breakout", 1_000_000,
                                       {"utd": (0.25,), "n_step": (1, 3), "lr": (2.5e-4, 1e-3)}),
                 "paper": calibration("minatar_breakout", 1_000_000,
                                       {"utd": (0.25, 1.0), "n_step": (1, 3), "lr": (2.5e-4, 1e-3)})},
          seeds={"small": 2, "paper": 3}, seed_set="calibration"),
]}
