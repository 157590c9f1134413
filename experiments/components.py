"""What each piece of the designs costs on this machine, measured warm and alone, with spread.

    python -m experiments.components with cartpole env_step_cost_us=1000     # a tracked run
    python -m experiments.plan with env_id=my_envs:MyEnv-v0                   # uses `measure`

For one env and learner config: the env step (resets amortised over the episodes), one greedy
action, batched greedy actions for N observations, the n-step fold and the replay store per
step, one replay sample and one update at the configured network and batch, the policy-lag
diagnostics per update, the hand-off per transition through a shared-memory ring (the actor's
write, the learner's drain into the replay), a weight publication, and AsyncVectorEnv's round
trip for N envs (step_async, step_wait once the results are in, and both back to back); on
CUDA, where present, the update with its host-to-device copy. Each cost is the median over
repeated timed blocks, with their p10 and p90: the inputs of analysis/cost_model.py.
"""

from __future__ import annotations

import functools
import statistics
import sys
import time

import numpy as np

from architectures.core.config import DQNConfig

BLOCKS = 9
"""Timed blocks per component: the median is reported, with p10 and p90 as the spread."""
REPEATS = 3
"""Passes over the loop-level costs (vector_env's round trips, single_env's and hogwild's loops):
the median pass is kept (`median_repeat`)."""
FILL_LIMIT = 200_000
"""Rows the replay is filled with before sampling is timed (its capacity, up to this)."""


def _spread(samples: list[float]) -> dict:
    qs = np.percentile(samples, [10, 50, 90])
    return {"us": float(qs[1]), "p10": float(qs[0]), "p90": float(qs[2])}


def _timed(fn, calls: int, blocks: int = BLOCKS, warmup: int | None = None) -> dict:
    """us per call of fn(), median over `blocks` blocks of `calls` calls, after a warm-up; `cpu_us`
    is this thread's CPU per call in the same blocks (the median block's), wall and CPU apart: an
    env that waits takes wall time and no CPU."""
    for _ in range(warmup if warmup is not None else max(1, calls // 5)):
        fn()
    samples, cpu = [], []
    for _ in range(blocks):
        start, start_cpu = time.perf_counter(), time.thread_time()
        for _ in range(calls):
            fn()
        samples.append(1e6 * (time.perf_counter() - start) / calls)
        cpu.append(1e6 * (time.thread_time() - start_cpu) / calls)
    return {**_spread(samples), "cpu_us": float(np.median(cpu))}


def env_wait(env_id: str, wait_us: float, step_us: float, steps: int = 400) -> dict:
    """The wall time an env step with `env_step_wait_us` adds over the plain step (`step_us`),
    and the CPU it takes: the achieved wait the cost model adds to the roles that step envs, as
    wall time only (a sleep overshoots; the wrapper's correction is what is measured here)."""
    from architectures.core.envs import make_env

    env = make_env(env_id, 0.0, wait_us)
    env.reset(seed=0)

    def step():
        if env.step(0)[2]:
            env.reset(seed=0)

    timed = _timed(step, max(20, steps // BLOCKS), warmup=50)
    env.close()
    return {"us": max(0.0, timed["us"] - step_us), "p10": max(0.0, timed["p10"] - step_us),
            "p90": max(0.0, timed["p90"] - step_us), "cpu_us": timed["cpu_us"]}


def vector_sizes(cores: int) -> list[int]:
    """The env counts at which AsyncVectorEnv's round trip is measured; the model interpolates."""
    return sorted({1, 2, cores, 2 * cores})


def measure(cfg: DQNConfig, *, cores: int, budget_s: float = 40.0, log=print) -> dict:
    """Every component's cost for `cfg` (us per call, with spread). `budget_s` paces the blocks."""
    import torch

    from architectures.core.diagnostics import PolicyLag
    from architectures.core.dqn import DQNLearner
    from architectures.core.envs import make_env
    from architectures.core.networks import GreedyPolicy, build_q_network
    from architectures.core.replay import NStepAdder, make_replay
    from architectures.transport.channels import TransitionRing, WeightChannel
    from architectures.transport.shared import SharedBlocks

    torch.set_num_threads(cfg.torch_threads)
    rng = np.random.default_rng(cfg.seed)
    wait_us, cfg = cfg.env_step_wait_us, cfg.replace(env_step_wait_us=0.0)  # the wait is measured apart
    env = make_env(cfg.env_id, cfg.env_step_cost_us)
    space = env.observation_space
    costs: dict = {}
    # ------------------------------------------------------------------ the env, resets amortised
    obs, _ = env.reset(seed=int(rng.integers(2**31)))
    steps_log: list[tuple] = []

    def env_step():
        nonlocal obs
        action = int(rng.integers(env.action_space.n))
        nxt, reward, term, trunc, _ = env.step(action)
        if len(steps_log) < 20_000:
            steps_log.append((obs, action, reward, nxt, term, trunc))
        obs = env.reset(seed=int(rng.integers(2**31)))[0] if term or trunc else nxt

    probe = time.perf_counter()
    for _ in range(50):
        env_step()
    per_step = (time.perf_counter() - probe) / 50
    calls = int(max(50, min(5_000, budget_s * 0.15 / BLOCKS / max(per_step, 1e-6))))
    costs["env_step"] = _timed(env_step, calls)
    log(f"  env step (resets amortised): {costs['env_step']['us']:,.1f} us, of which CPU "
        f"{costs['env_step']['cpu_us']:,.1f} us")
    if wait_us > 0:
        costs["env_wait"] = env_wait(cfg.env_id, wait_us, costs["env_step"]["us"])
        log(f"  env wait (env_step_wait_us={wait_us:g}): {costs['env_wait']['us']:,.1f} us of wall time per step, "
            f"{costs['env_wait']['cpu_us']:,.1f} us of it CPU")
    # ------------------------------------------------------------------ acting, folding, storing
    net = build_q_network(space.shape, int(env.action_space.n), cfg.hidden_sizes, cfg.layer_norm, cfg.seed)
    learner = DQNLearner(net, cfg)
    policy = GreedyPolicy(learner.online, rng)
    observations = np.stack([s[0] for s in steps_log[:512]])
    i = iter(range(10**9))
    costs["act"] = _timed(lambda: policy.act(observations[next(i) % len(observations)], 0.0), 2_000)
    # Per-N costs are keyed by str(N): run stores (JSON, MongoDB) keep only string keys.
    costs["act_batch"] = {str(n): _timed(lambda n=n: policy.act_batch(observations[:n], 0.0), 500)
                          for n in vector_sizes(cores) if n <= len(observations)}
    adder = NStepAdder(cfg.n_step, cfg.gamma)
    replay = make_replay(cfg, space.shape, space.dtype)
    j = iter(range(10**9))

    def fold():
        return adder.step(*steps_log[next(j) % len(steps_log)], 0)

    costs["fold"] = _timed(fold, 2_000)
    transitions = [t for _ in range(len(steps_log)) for t in fold()][:max(4 * cfg.batch_size, 5_000)]
    k = iter(range(10**9))
    costs["store"] = _timed(lambda: replay.add(transitions[next(k) % len(transitions)]), 2_000)
    log(f"  act {costs['act']['us']:,.1f} us, fold {costs['fold']['us']:,.1f} us, store {costs['store']['us']:,.1f} us")
    # ------------------------------------------------------------------ learning
    # A full replay, as a run has after its first buffer_size steps: sampling a small one stays in
    # the cache and measured a third of the in-run cost (28 against 63-106 us, CartPole).
    rows = np.array([tuple(t) for t in transitions], dtype=replay.dtype)
    for _ in range(-(-min(cfg.buffer_size, FILL_LIMIT) // len(rows))):
        replay.extend(rows[rng.permutation(len(rows))])
    costs["sample"] = _timed(lambda: replay.sample(cfg.batch_size, rng), 300)
    batches = [replay.sample(cfg.batch_size, rng) for _ in range(16)]  # fresh rows, sampled apart
    batch = batches[0]
    probe = time.perf_counter()
    learner.update(batch)
    per_update = time.perf_counter() - probe
    b = iter(range(10**9))
    costs["update"] = _timed(lambda: learner.update(batches[next(b) % 16]),
                             int(max(5, min(300, budget_s * 0.3 / BLOCKS / max(per_update, 1e-6)))))
    lag, sources = PolicyLag(), np.zeros(8, np.int64)

    def diagnostics():
        lag.record(100, batch["version"])
        sources[:] += np.bincount(batch["source"], minlength=8)[:8]

    costs["diagnostics"] = _timed(diagnostics, 500)
    log(f"  sample {costs['sample']['us']:,.1f} us, update {costs['update']['us']:,.1f} us (batch {cfg.batch_size})")
    if torch.cuda.is_available():
        gpu = DQNLearner(build_q_network(space.shape, int(env.action_space.n), cfg.hidden_sizes, cfg.layer_norm,
                                         cfg.seed), cfg.replace(device="cuda"))

        def cuda_update():  # the host-to-device copy of the batch is part of it
            gpu.update(batches[next(b) % 16])
            torch.cuda.synchronize()

        costs["update_cuda"] = _timed(cuda_update, 100)
        log(f"  update on CUDA (host-to-device copy included): {costs['update_cuda']['us']:,.1f} us")
    # ------------------------------------------------------------------ hand-off and weights (shared memory)
    import multiprocessing as mp

    blocks = SharedBlocks()
    try:
        status = np.zeros(1, [("env_steps", np.int64)])
        ring = TransitionRing(**TransitionRing.allocate(blocks, "ring", 4096, replay.dtype),
                              lock=mp.get_context("spawn").Lock(), status_row=status[0])
        rows = iter(range(10**9))

        def write():
            if not ring.has_room():
                ring.drain(lambda r, p: None)
            ring.write(transitions[next(rows) % len(transitions)])
            ring.publish(1)

        costs["ring_write"] = _timed(write, 2_000)
        ring.drain(lambda r, p: None)

        staleness = PolicyLag()

        def drain(rows_per_drain: int = 16) -> float:
            """The learner's side: drain a ring holding what an actor handed off since the last
            drain (16 rows: 8 updates' worth at utd 0.25 from two actors) into the replay."""
            for _ in range(rows_per_drain):
                ring.write(transitions[next(rows) % len(transitions)])
            ring.publish(1)
            began = time.perf_counter()
            ring.drain(lambda r, p: (staleness.record(0, r["version"]), replay.extend(r)))
            return 1e6 * (time.perf_counter() - began) / rows_per_drain

        costs["ring_drain"] = _spread([drain() for _ in range(BLOCKS * 20)])
        params = [p.detach().numpy() for p in learner.online.parameters()]
        arrays = WeightChannel.allocate(blocks, [p.shape for p in params])
        weights = WeightChannel(arrays["weights"], arrays["weights_header"], mp.get_context("spawn").Lock(),
                                [p.shape for p in params])
        version = iter(range(10**9))
        costs["weight_publish"] = _timed(lambda: weights.publish(params, next(version)), 200)
    finally:
        blocks.close()
    log(f"  hand-off per transition: write {costs['ring_write']['us']:,.1f} us, drain {costs['ring_drain']['us']:,.1f}"
        f" us; weight publication {costs['weight_publish']['us']:,.1f} us")
    env.close()
    # The loops' costs, REPEATS times and interleaved, each the median repeat: on a shared machine
    # a single pass caught seconds-long slow spells (an update 1.8x, hogwild's loop 2.5x dearer
    # in one pass than in the next), and the median of three spread over a minute rejects one.
    repeats = []
    for _ in range(REPEATS):
        rep = _vector_costs(cfg, cores, learner, policy, replay, rng)
        rep["in_loop"] = in_loop(cfg, budget_s * 0.3 / REPEATS)
        if wait_us > 0:  # the same loop where the env waits: a process that idles pays more per update
            rep["in_loop_waiting"] = in_loop(cfg.replace(env_step_wait_us=wait_us), budget_s * 0.15 / REPEATS)
        rep["hogwild_in_loop"] = design_in_loop("hogwild", cfg, budget_s * 0.3 / REPEATS)
        repeats.append(rep)
    costs.update(median_repeat(repeats))
    # hogwild's and vector_env's loops are measured at this utd: the model uses them only there.
    costs["loops_utd"] = {"us": float(cfg.utd), "p10": float(cfg.utd), "p90": float(cfg.utd)}
    log("  in single_env's loop: " + ", ".join(f"{k} {v['us']:,.1f} us" for k, v in costs["in_loop"].items()))
    if "in_loop_waiting" in costs:
        log("  ... where the env waits: " + ", ".join(f"{k} {v['us']:,.1f} us" for k, v in
                                                   costs["in_loop_waiting"].items() if k != "env_step"))
    log(f"  an env step of hogwild's worker loop (one worker, steady state): {costs['hogwild_in_loop']['us']:,.1f} us")
    if cores > 1:
        costs["hogwild_at_cores"] = design_in_loop("hogwild", cfg, budget_s * 0.1, workers=cores)
        log(f"  an env step of hogwild's loop with {cores} workers: {costs['hogwild_at_cores']['us']:,.1f} us")
    costs["actor_learner_shared"] = shared_roles(cfg, cores, budget_s * 0.15)
    shared = costs["actor_learner_shared"]
    log(f"  actor_learner at {cores} actors ({cores + 1} processes on {cores} cores), CPU per env step: learner "
        f"{shared['learner']['us']:,.1f} us, actors {shared['actors']['us']:,.1f} us (wall {shared['wall']['us']:,.1f} us)")
    if wait_us > 0:  # past the cores, where the env waits: what each role really pays in CPU
        costs.update(waiting_roles(cfg.replace(env_step_wait_us=wait_us), waiting_counts(cores)))
        log("  actor_learner where the env waits, CPU per env step: " + ", ".join(
            f"{n} actors: actors {costs['actor_learner_waiting_actors'][n]['us']:,.1f} us, learner "
            f"{costs['actor_learner_waiting_learner'][n]['us']:,.1f} us" for n in waiting_counts(cores)))
    costs["contention"] = contention(cfg, cores, budget_s * 0.05)
    log(f"  single_env's loop with a loop like it on every other core: {costs['contention']['us']:.2f}x its time "
        "alone")
    return costs


def median_repeat(repeats: list[dict]) -> dict:
    """Costs measured in several passes -> one: per cost (and per N or member of a group), the
    whole {us, p10, p90} of the pass whose `us` is the median (the lower middle of an even count)."""
    out: dict = {}
    for name, value in repeats[0].items():
        if "us" in value:
            ranked = sorted((r[name] for r in repeats), key=lambda v: v["us"])
            out[name] = ranked[(len(ranked) - 1) // 2]
        else:
            out[name] = median_repeat([r[name] for r in repeats])
    return out


def in_loop(cfg: DQNConfig, seconds: float) -> dict:
    """Each component's cost as single_env's own loop pays it (its timers, a short run, no
    evaluation): alone, a component is warm in the cache; in the loop the env step and the store
    between two updates evict it. The scaling sweep measured the update 9% and the sample 125%
    dearer in the loop than alone (CartPole, 2 cores), so the cost model takes these."""
    from architectures.designs.single_env import train

    probe = cfg.replace(total_env_steps=400, learning_starts=100, eval_episodes=0, log_every=400, eval_every=400,
                        checkpoint_every=0, checkpoint_path="")
    rate = train(probe)["env_steps_per_sec"]
    steps = int(min(100_000, max(2_000, seconds * rate)))
    result = train(probe.replace(total_env_steps=steps, learning_starts=steps // 5, log_every=steps, eval_every=steps))
    rows = result["time_breakdown"]
    return {name: {"us": rows[name]["us_per_call"], "p10": rows[name]["us_per_call"],
                   "p90": rows[name]["us_per_call"]} for name in ("act", "env_step", "replay_add", "sample", "update")}


def design_in_loop(design: str, cfg: DQNConfig, seconds: float, workers: int = 1) -> dict:
    """One env step of `design` with `workers` workers (us per env step of all of them), as its own
    loop pays it in steady state: two
    runs of S and 2 S env steps (learning from the start, no evaluation), and the second S's
    share of the time, so start-up and the first, slow updates cancel out. hogwild's worker loop
    paid 13% more than single_env's for the same components (its per-step and per-update
    bookkeeping in shared memory), so the model calibrates hogwild's formula here, at one
    worker, and at `workers` = cores (`hogwild_at_cores`, us per env step of all workers): two
    workers writing the same parameters and Adam moments slowed each other 1.33x at a free env
    step in one window's runs (0.98-1.55x, median 1.14x, in the next window's three
    measurements), where two independent single_env loops slowed each other 1.02-1.11x
    (`contention`), so the model measures it rather than assume it."""
    from architectures import get_train_fn

    train = get_train_fn(design)
    short = cfg.replace(num_workers=workers, eval_episodes=0, checkpoint_every=0, checkpoint_path="",
                        log_every=10**9, prioritized=False, learning_starts=min(cfg.batch_size, cfg.learning_starts))
    probe = train(short.replace(total_env_steps=500 * workers, eval_every=500 * workers))
    steps = int(min(50_000, max(2_000, seconds / 3 * probe["env_steps_per_sec"])))
    once = train(short.replace(total_env_steps=steps, eval_every=steps))["train_seconds"]
    twice = train(short.replace(total_env_steps=2 * steps, eval_every=2 * steps))["train_seconds"]
    us = 1e6 * max(twice - once, 1e-9) / steps
    return {"us": us, "p10": us, "p90": us}


def shared_roles(cfg: DQNConfig, cores: int, seconds: float) -> dict:
    """actor_learner's roles as they pay when they time-share the cores: `cores` actors and the
    learner (cores + 1 processes), each role's CPU per env step (the learner's from the main
    process, the actors' from the children), and the wall time per env step; two runs of S and
    2 S env steps, the second S's share, so start-up cancels out. The model's time-sharing bound
    assumed each role pays its alone cost (the learner what single_env's loop pays) and that the
    processes share the cores perfectly; time-shared, the learner paid 0.93-1.30x that in CPU
    (median 1.05x, CartPole at 1 ms env steps, 2 cores, three idle measurements; 1.4x in a first
    one beside other work), preempted by the actors and polling while it waits for data, so the
    model takes what the roles paid (`test_time_shared_roles_pay_...`)."""
    import resource

    from architectures import get_train_fn

    train = get_train_fn("actor_learner")
    short = cfg.replace(num_workers=cores, eval_episodes=0, checkpoint_every=0, checkpoint_path="", log_every=10**9,
                        prioritized=False, learning_starts=min(cfg.batch_size, cfg.learning_starts))

    def cpu(who: int) -> float:
        usage = resource.getrusage(who)
        return usage.ru_utime + usage.ru_stime

    def run(steps: int) -> tuple[float, float, float]:
        self0, kids0 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)  # children once joined
        seconds_ = train(short.replace(total_env_steps=steps, eval_every=steps))["train_seconds"]
        return seconds_, cpu(resource.RUSAGE_SELF) - self0, cpu(resource.RUSAGE_CHILDREN) - kids0

    probe = run(max(500, 100 * cores))
    steps = int(min(60_000, max(2_000, seconds / 3 * max(500, 100 * cores) / max(probe[0], 1e-6))))
    once, twice = run(steps), run(2 * steps)
    wall, learner, actors = (1e6 * max(b - a, 1e-9) / steps for a, b in zip(once, twice))
    return {name: {"us": v, "p10": v, "p90": v} for name, v in (("wall", wall), ("learner", learner),
                                                                  ("actors", actors))}


def waiting_counts(cores: int) -> list[int]:
    """The actor counts `waiting_roles` runs at: 4 and 12 x the cores (8 and 24 on 2 cores), up to
    the suite's 64: far enough past the cores that the actors' wake-ups crowd them."""
    return sorted({min(64, 4 * cores), min(64, 12 * cores)})


def waiting_roles(cfg: DQNConfig, counts: list[int], steps: int = 12_000) -> dict:
    """actor_learner's roles where the env waits, at each of `counts` actors: the actors' CPU and
    the learner's per env step, from the run's own `cpu` (over its training clock only, so one
    run a count: start-up is not in it). Past the cores the components alone undercount what
    waiting actors pay: on 2 cores an actor at 8, 16 and 24 actors paid 211, 244 and 301 us of
    CPU per env step (its wake-ups, its weight copies, caches shared with ever more processes)
    where the components summed to ~130 us, and the runs kept 1.91-1.95 of the 2 cores busy: the
    cores bound them, at the CPU they really paid (CartPole waiting 2.2 ms, seed 1; issue 21's
    shape_check missed actor_learner at 16 and 24 actors by -25% and -35% without this term)."""
    import warnings

    from architectures.designs.actor_learner.local import train

    actors, learner = {}, {}
    for n in counts:
        run = cfg.replace(num_workers=n, total_env_steps=steps, eval_every=steps, log_every=steps, eval_episodes=0,
                          checkpoint_every=0, checkpoint_path="", prioritized=False,
                          learning_starts=min(cfg.batch_size, cfg.learning_starts))
        with warnings.catch_warnings():  # the oversubscription is the point here
            warnings.simplefilter("ignore", RuntimeWarning)
            cpu = train(run)["cpu"]
        if cpu is None:  # no /proc: the model keeps the components' sum
            return {}
        actors[n] = _spread([cpu["workers_us_per_env_step"]])  # one run: us = p10 = p90
        learner[n] = _spread([cpu["main_us_per_env_step"]])
    return {"actor_learner_waiting_actors": actors, "actor_learner_waiting_learner": learner}


def _short_loop(cfg: DQNConfig, steps: int) -> float:
    """single_env's loop for `steps` env steps (no evaluation): its env steps per second."""
    from architectures.designs.single_env import train

    return train(cfg.replace(total_env_steps=steps, learning_starts=steps // 5, eval_episodes=0, log_every=steps,
                             eval_every=steps, checkpoint_every=0, checkpoint_path=""))["env_steps_per_sec"]


def _busy(config: dict, steps: int, running, parent: int) -> None:
    """A co-runner: single_env's loop on the same config, one short run after another (it says
    so on `running` once its first run is done, so the measurement starts when it really runs)."""
    import os

    import torch

    _die_with_parent()
    if os.getppid() != parent:  # it died before the death signal was armed
        return
    torch.set_num_threads(1)
    cfg = DQNConfig.from_dict(config)
    _short_loop(cfg, 500)
    running.release()
    while os.getppid() == parent:  # until the measuring process stops it, or is gone
        _short_loop(cfg, steps)


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent dies (a killed `plan` or `on_device` leaves no
    co-runner spinning on the cores); elsewhere the co-runner's loop checks its parent instead."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def contention(cfg: DQNConfig, cores: int, seconds: float) -> dict:
    """How much slower single_env's loop runs while a loop like it runs on every other core
    (shared caches, memory bandwidth, SMT siblings): the factor the model applies, in proportion,
    to processes that run at once. A co-runner doing bare updates back to back (the first way
    this was measured) slowed the update 2x, while two hogwild workers, each a loop of env steps,
    stores and updates, slowed each other 1.14x: the co-runner must be the same kind of loop."""
    import multiprocessing as mp
    import os

    probe = _short_loop(cfg, 400)
    steps = int(min(100_000, max(2_000, seconds * probe)))
    alone = [1e6 / _short_loop(cfg, steps) for _ in range(3)]
    if cores < 2:
        return {"us": 1.0, "p10": 1.0, "p90": 1.0}
    ctx = mp.get_context("spawn")
    running = ctx.Semaphore(0)
    others = [ctx.Process(target=_busy, args=(cfg.to_dict(), steps, running, os.getpid()),
                          daemon=True) for _ in range(cores - 1)]
    for proc in others:
        proc.start()
    try:
        for _ in others:  # every co-runner is in its loop before the clock starts
            if not running.acquire(timeout=120):
                dead = [p.exitcode for p in others if not p.is_alive()]
                raise RuntimeError(f"contention: a co-runner never started its loop (exit codes {dead})")
        busy = [1e6 / _short_loop(cfg, steps) for _ in range(3)]
    finally:
        for proc in others:
            proc.kill()
            proc.join()
    ratios = sorted(b / a for b, a in zip(sorted(busy), sorted(alone)))
    return {"us": float(np.median(busy) / np.median(alone)), "p10": ratios[0], "p90": ratios[-1]}


def _vector_costs(cfg: DQNConfig, cores: int, learner, policy, replay, rng) -> dict:
    """AsyncVectorEnv for N envs: step_async, step_wait once the results are there, the two back
    to back (the round trip: the envs' step plus the IPC), and vector_env's loop without its
    bookkeeping: act for all envs, send, learn what is owed meanwhile, receive (the batched act
    and the round trip as the loop pays them: the learning beside the envs stretches their reply
    and leaves the act cold; measured idle, they missed a 1 ms env's run by up to 35%)."""
    from fractions import Fraction

    from gymnasium.vector import AsyncVectorEnv, AutoresetMode

    from architectures.core.envs import make_env
    from architectures.transport import janitor

    janitor.install()
    out: dict = {name: {} for name in ("vector_round_trip", "vector_send", "vector_recv", "vector_act_in_loop",
                                       "vector_round_trip_learning")}
    for n in vector_sizes(cores):
        envs = AsyncVectorEnv([functools.partial(make_env, cfg.env_id, cfg.env_step_cost_us)] * n,
                              shared_memory=True, context="spawn", autoreset_mode=AutoresetMode.NEXT_STEP)
        try:
            obs, _ = envs.reset(seed=list(range(n)))
            actions = np.zeros(n, dtype=np.int64)
            rt = []
            for _ in range(60):
                began = time.perf_counter()
                envs.step_async(actions)
                envs.step_wait()
                rt.append(1e6 * (time.perf_counter() - began))
            sends, recvs = [], []
            for _ in range(40):
                began = time.perf_counter()
                envs.step_async(actions)
                sends.append(1e6 * (time.perf_counter() - began))
                time.sleep(max(0.002, 3e-6 * statistics.median(rt)))  # the envs are done by now
                began = time.perf_counter()
                envs.step_wait()
                recvs.append(1e6 * (time.perf_counter() - began))
            owed, per_step, acts, loops = Fraction(0), Fraction(str(cfg.utd)) * n, [], []
            for i in range(20 + int(max(150, 4 / max(float(per_step), 1e-3)))):  # whole update cycles
                began = time.perf_counter()
                actions = policy.act_batch(obs, 0.0)
                acted = time.perf_counter()
                envs.step_async(actions)
                owed += per_step
                while owed >= 1:
                    learner.update(replay.sample(cfg.batch_size, rng))
                    owed -= 1
                obs = envs.step_wait()[0]
                if i >= 20:
                    acts.append(1e6 * (acted - began))
                    loops.append(1e6 * (time.perf_counter() - acted))
        finally:
            envs.close(terminate=True)
        key = str(n)
        out["vector_round_trip"][key], out["vector_send"][key] = _spread(rt[10:]), _spread(sends)
        out["vector_recv"][key], out["vector_act_in_loop"][key] = _spread(recvs), _spread(acts)
        out["vector_round_trip_learning"][key] = {"us": float(np.mean(loops)), "p10": float(np.percentile(loops, 10)),
                                                  "p90": float(np.percentile(loops, 90))}
    return out


# ---------------------------------------------------------------------- the tracked experiment
def _experiment():
    from sacred import SETTINGS, Experiment

    from experiments.configs import NAMED_CONFIGS
    from experiments.train import _cpu_count, _cpu_model, _git, _packages, _thread_env, build_config

    SETTINGS.CAPTURE_MODE = "sys"
    ex = Experiment("components", save_git_info=False,
                    additional_host_info=[_cpu_count, _cpu_model, _packages, _thread_env, _git])
    ex.add_config(dict(architecture="single_env", **DQNConfig().to_dict()))
    for name, values in NAMED_CONFIGS.items():
        ex.add_named_config(name, values)

    @ex.main
    def main(_config: dict) -> dict:
        from architectures.core.limits import available_cores

        _, cfg = build_config(_config)
        cores = available_cores()
        return {"cores": cores, "costs_us": measure(cfg, cores=cores, log=lambda line: print(line, file=sys.stderr))}

    return ex


if __name__ == "__main__":
    from experiments.train import attach_observers

    experiment = _experiment()
    experiment.run_commandline(attach_observers(experiment, list(sys.argv)))
