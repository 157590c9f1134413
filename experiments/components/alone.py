"""Each piece of the designs measured warm and alone, with spread (experiments/components/measure.py
puts them together with the loops' costs): the env step and its wait, acting, the n-step fold
and the replay store, sampling and the update (on CUDA too, where present), the policy-lag
diagnostics, the shared-memory ring's hand-off and a weight publication."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from architectures.core.config import DQNConfig

BLOCKS = 9
"""Timed blocks per component: the median is reported, with p10 and p90 as the spread."""
FILL_LIMIT = 200_000
"""Rows the replay is filled with before sampling is timed (its capacity, up to this)."""


def spread(samples: list[float]) -> dict:
    qs = np.percentile(samples, [10, 50, 90])
    return {"us": float(qs[1]), "p10": float(qs[0]), "p90": float(qs[2])}


def queued_seconds() -> float:
    """This thread's time spent runnable but waiting for a CPU (Linux /proc/thread-self/schedstat),
    or 0 where it cannot be read: wall time that is neither work nor a wait of the env's own."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def timed(fn, calls: int, blocks: int = BLOCKS, warmup: int | None = None) -> dict:
    """us per call of fn(), median over `blocks` blocks of `calls` calls, after a warm-up; `cpu_us`
    is this thread's CPU per call in the same blocks and `queued_us` its time waiting for a CPU
    (the median block's of each): wall, work and preemption apart. An env that waits takes wall
    time that is neither; a busy env on a shared machine takes wall time that is queued."""
    for _ in range(warmup if warmup is not None else max(1, calls // 5)):
        fn()
    samples, cpu, queued = [], [], []
    for _ in range(blocks):
        start, start_cpu, start_queued = time.perf_counter(), time.thread_time(), queued_seconds()
        for _ in range(calls):
            fn()
        samples.append(1e6 * (time.perf_counter() - start) / calls)
        cpu.append(1e6 * (time.thread_time() - start_cpu) / calls)
        queued.append(1e6 * (queued_seconds() - start_queued) / calls)
    return {**spread(samples), "cpu_us": float(np.median(cpu)), "queued_us": float(np.median(queued))}


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

    measured = timed(step, max(20, steps // BLOCKS), warmup=50)
    env.close()
    return {"us": max(0.0, measured["us"] - step_us), "p10": max(0.0, measured["p10"] - step_us),
            "p90": max(0.0, measured["p90"] - step_us), "cpu_us": measured["cpu_us"]}


@dataclass
class Bench:
    """What the measurements alone share, built as they go: the env (its wait left out: it is
    measured apart) and the transitions it made, then the learner, its greedy policy and a replay."""

    cfg: DQNConfig
    rng: np.random.Generator
    env: object
    steps_log: list = field(default_factory=list)
    """Up to 20,000 (obs, action, reward, next obs, terminated, truncated) from the env."""
    learner: object = None
    policy: object = None
    replay: object = None
    transitions: list = field(default_factory=list)
    """n-step transitions folded from `steps_log`."""

    @staticmethod
    def open(cfg: DQNConfig) -> Bench:
        from architectures.core.envs import make_env

        return Bench(cfg, np.random.default_rng(cfg.seed), make_env(cfg.env_id, cfg.env_step_cost_us))


def env_costs(bench: Bench, wait_us: float, budget_s: float, log) -> dict:
    """The env step, resets amortised over the episodes; with a wait, the wall time it adds."""
    cfg, env, rng, steps_log = bench.cfg, bench.env, bench.rng, bench.steps_log
    costs: dict = {}
    obs, _ = env.reset(seed=int(rng.integers(2**31)))

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
    costs["env_step"] = timed(env_step, calls)
    log(f"  env step (resets amortised): {costs['env_step']['us']:,.1f} us, of which CPU "
        f"{costs['env_step']['cpu_us']:,.1f} us")
    if wait_us > 0:
        costs["env_wait"] = env_wait(cfg.env_id, wait_us, costs["env_step"]["us"])
        log(f"  env wait (env_step_wait_us={wait_us:g}): {costs['env_wait']['us']:,.1f} us of wall time per step, "
            f"{costs['env_wait']['cpu_us']:,.1f} us of it CPU")
    return costs


def acting_costs(bench: Bench, sizes: list[int], log) -> dict:
    """One greedy action, batched greedy actions for each of `sizes` observations, the n-step fold
    and the replay store per step; builds the bench's learner, policy, replay and transitions."""
    from architectures.core.dqn import DQNLearner
    from architectures.core.networks import GreedyPolicy, build_q_network
    from architectures.core.replay import NStepAdder, make_replay

    cfg, env, rng, steps_log = bench.cfg, bench.env, bench.rng, bench.steps_log
    space = env.observation_space
    costs: dict = {}
    net = build_q_network(space.shape, int(env.action_space.n), cfg.hidden_sizes, cfg.layer_norm, cfg.seed)
    bench.learner = DQNLearner(net, cfg)
    policy = bench.policy = GreedyPolicy(bench.learner.online, rng)
    observations = np.stack([s[0] for s in steps_log[:512]])
    i = iter(range(10**9))
    costs["act"] = timed(lambda: policy.act(observations[next(i) % len(observations)], 0.0), 2_000)
    # Per-N costs are keyed by str(N): run stores (JSON, MongoDB) keep only string keys.
    costs["act_batch"] = {str(n): timed(lambda n=n: policy.act_batch(observations[:n], 0.0), 500)
                          for n in sizes if n <= len(observations)}
    adder = NStepAdder(cfg.n_step, cfg.gamma)
    replay = bench.replay = make_replay(cfg, space.shape, space.dtype)
    j = iter(range(10**9))

    def fold():
        return adder.step(*steps_log[next(j) % len(steps_log)], 0)

    costs["fold"] = timed(fold, 2_000)
    transitions = bench.transitions = [t for _ in range(len(steps_log)) for t in fold()][:max(4 * cfg.batch_size, 5_000)]
    k = iter(range(10**9))
    costs["store"] = timed(lambda: replay.add(transitions[next(k) % len(transitions)]), 2_000)
    log(f"  act {costs['act']['us']:,.1f} us, fold {costs['fold']['us']:,.1f} us, store {costs['store']['us']:,.1f} us")
    return costs


def learning_costs(bench: Bench, budget_s: float, log) -> dict:
    """One replay sample and one update at the configured network and batch from a full replay,
    the policy-lag diagnostics per update, and on CUDA, where present, the update with its
    host-to-device copy."""
    import torch

    from architectures.core.diagnostics import PolicyLag
    from architectures.core.dqn import DQNLearner
    from architectures.core.networks import build_q_network

    cfg, env, rng, replay, learner = bench.cfg, bench.env, bench.rng, bench.replay, bench.learner
    space = env.observation_space
    costs: dict = {}
    # A full replay, as a run has after its first buffer_size steps: sampling a small one stays in
    # the cache and measured a third of the in-run cost (28 against 63-106 us, CartPole).
    rows = np.array([tuple(t) for t in bench.transitions], dtype=replay.dtype)
    for _ in range(-(-min(cfg.buffer_size, FILL_LIMIT) // len(rows))):
        replay.extend(rows[rng.permutation(len(rows))])
    costs["sample"] = timed(lambda: replay.sample(cfg.batch_size, rng), 300)
    batches = [replay.sample(cfg.batch_size, rng) for _ in range(16)]  # fresh rows, sampled apart
    batch = batches[0]
    probe = time.perf_counter()
    learner.update(batch)
    per_update = time.perf_counter() - probe
    b = iter(range(10**9))
    costs["update"] = timed(lambda: learner.update(batches[next(b) % 16]),
                            int(max(5, min(300, budget_s * 0.3 / BLOCKS / max(per_update, 1e-6)))))
    lag, sources = PolicyLag(), np.zeros(8, np.int64)

    def diagnostics():
        lag.record(100, batch["version"])
        sources[:] += np.bincount(batch["source"], minlength=8)[:8]

    costs["diagnostics"] = timed(diagnostics, 500)
    log(f"  sample {costs['sample']['us']:,.1f} us, update {costs['update']['us']:,.1f} us (batch {cfg.batch_size})")
    if torch.cuda.is_available():
        gpu = DQNLearner(build_q_network(space.shape, int(env.action_space.n), cfg.hidden_sizes, cfg.layer_norm,
                                         cfg.seed), cfg.replace(device="cuda"))

        def cuda_update():  # the host-to-device copy of the batch is part of it
            gpu.update(batches[next(b) % 16])
            torch.cuda.synchronize()

        costs["update_cuda"] = timed(cuda_update, 100)
        log(f"  update on CUDA (host-to-device copy included): {costs['update_cuda']['us']:,.1f} us")
    return costs


def hand_off_costs(bench: Bench, log) -> dict:
    """Through shared memory: the hand-off per transition (the actor's write into a ring, the
    learner's drain into the replay) and a weight publication."""
    import multiprocessing as mp

    from architectures.core.diagnostics import PolicyLag
    from architectures.transport.channels import TransitionRing, WeightChannel
    from architectures.transport.shared import SharedBlocks

    replay, transitions = bench.replay, bench.transitions
    costs: dict = {}
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

        costs["ring_write"] = timed(write, 2_000)
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

        costs["ring_drain"] = spread([drain() for _ in range(BLOCKS * 20)])
        params = [p.detach().numpy() for p in bench.learner.online.parameters()]
        arrays = WeightChannel.allocate(blocks, [p.shape for p in params])
        weights = WeightChannel(arrays["weights"], arrays["weights_header"], mp.get_context("spawn").Lock(),
                                [p.shape for p in params])
        version = iter(range(10**9))
        costs["weight_publish"] = timed(lambda: weights.publish(params, next(version)), 200)
    finally:
        blocks.close()
    log(f"  hand-off per transition: write {costs['ring_write']['us']:,.1f} us, drain {costs['ring_drain']['us']:,.1f}"
        f" us; weight publication {costs['weight_publish']['us']:,.1f} us")
    return costs


def rollout_costs(bench: Bench, sizes: list[int], log) -> dict:
    """pqn's learning per env step at each of `sizes` envs: one rollout of T = rollout_steps steps
    of N envs, its Q(lambda) targets (architectures/designs/pqn.py `lambda_returns`) and its
    rollout_epochs x rollout_minibatches updates (`fit_rollout`, the code the runs execute, on a
    fresh network and RAdam, minibatches of T N / rollout_minibatches), over the T N env steps it
    learns from. The env's own observations, random actions and targets: the cost does not depend
    on their values."""
    import torch

    from architectures.core.networks import build_q_network
    from architectures.designs.pqn import fit_rollout, lambda_returns, make_optimizer

    cfg, env, rng = bench.cfg, bench.env, bench.rng
    space, actions_n, steps = env.observation_space, int(env.action_space.n), cfg.rollout_steps
    observations = np.stack([s[0] for s in bench.steps_log])
    net = build_q_network(space.shape, actions_n, cfg.hidden_sizes, cfg.layer_norm, cfg.seed)
    optimizer, shuffle = make_optimizer(net, cfg), np.random.default_rng(cfg.seed)
    costs: dict = {}
    for n in sizes:
        rows = steps * n
        b_obs = torch.as_tensor(observations[rng.integers(len(observations), size=rows)])  # (T N, *obs)
        b_actions = torch.as_tensor(rng.integers(actions_n, size=rows))  # (T N,)
        rewards = rng.random((steps, n), dtype=np.float32)  # (T, N)
        ended = rng.random((steps, n)) < 0.02  # (T, N)
        values = rng.random((steps, n), dtype=np.float32)

        def learn(b_obs=b_obs, b_actions=b_actions, rewards=rewards, ended=ended, values=values):
            targets = lambda_returns(rewards, ended, np.zeros_like(ended), values, cfg.gamma, cfg.q_lambda)
            fit_rollout(net, optimizer, shuffle, b_obs, b_actions, torch.as_tensor(targets.reshape(-1)), cfg,
                        lambda loss, q, norm: None)

        per_rollout = timed(learn, 2, blocks=5, warmup=1)
        costs[str(n)] = {k: v / rows for k, v in per_rollout.items()}  # us per env step learned from
    log("  pqn's learning per env step (a rollout's targets and updates over its T N env steps): " + ", ".join(
        f"{n} envs {costs[str(n)]['us']:,.1f} us" for n in sizes))
    return {"rollout_learn": costs}
