"""The cost model: env steps/s of every design at N workers, from component costs measured alone.

Inputs are microseconds per call, measured warm and one at a time on the machine in question
(`experiments.components`), and the machine's core count. Each design is a few roles, each
role a loop of components; the model says how fast each role could go and which one bounds
the run:

- single_env (and high_utd, the same loop): one process does everything in turn,
  T = env + act + fold + store + utd (sample + update).
- actor_learner(N): N actors each pay `actor` = env + act + fold + ring_write per env step; the
  learner pays `learner` = utd (sample + update + diagnostics + publish / weight_sync_period)
  + ring_drain per env step. Steady state is the smallest of the actors' rate N / actor, the
  learner's 1 / learner, and the cores' C / (actor + learner): with more processes than
  cores they time-share, and together cannot use more than C cores.
- hogwild(N): each worker pays the whole single_env loop on its own env steps (its own replay
  store, its own updates): min(N, C) / T.
- vector_env(N), since issue 34: N env processes answer as each is ready and one main process
  acts on those that have, learning between (EnvPool's async mode). Three roles, as
  actor_learner's: the envs, n / (env_wait + trip), trip the round trip of an env step from its
  command to its answer taken (`vector_trip`); the main process, 1 / (its acting and hand-off
  CPU, `vector_main`, + fold and store + utd (sample + update + diagnostics)); the cores,
  C / (an env process's CPU, `vector_env_cpu`, + the main process's), each measured per env step
  through the env processes themselves, their wait on (experiments/components_loops.py
  `vector_costs`: the trip without the wait, which the model adds; the CPU with what it costs).
  Before issue 34 (costs without `vector_trip`): one main process per vector step acted for all
  N envs, sent, learned what it owed while the envs stepped, received, folded and stored; the
  learning and the N env steps ran at once on the cores (processor sharing: k runnable
  processes on C cores each run at min(1, C / k)), the rest serial.

Two measured terms make the alone costs into what a run pays (both from the scaling sweep's
misses, where the model first over-predicted by 15-40%):
- `in_loop`: env step, act, store, sample and update as single_env's own loop pays them (its
  timers, a short run): between two updates the env steps and stores evict what a warm, alone
  measurement keeps in cache (sample 2.3x, update 1.1x dearer in the loop, CartPole);
- `contention`: the update's slowdown while every other core runs one too (shared caches,
  memory bandwidth, SMT siblings); a design with k processes busy at once pays it in proportion;
- `vector_act_in_loop`, `vector_round_trip_learning` (lockstep vector_env, before issue 34):
  its batched act and its round trip with the owed learning beside the envs' step, as its loop
  paid them at N envs (alone, they missed a 1 ms env's run by up to 35%);
- `hogwild_at_cores`: hogwild's loop with `cores` workers (us per env step of all of them): two
  workers writing the same parameters and Adam moments slowed each other 1.33x at a free
  CartPole step in one window (0.98-1.55x in the next), where two independent loops slowed
  each other 1.02-1.11x (`contention`), and the model, assuming the latter, missed hogwild (2)
  by 35%; one worker's cost is interpolated between one worker and `cores`, the cores bound beyond;
- `actor_learner_shared`: with more processes than cores (N + 1 > C), each role's CPU per env
  step as actor_learner's own loop paid it at N = C, time-sharing the cores (the learner paid
  0.93-1.30x its alone cost there, preempted by the actors and polling while it waits for data),
  where the bound on alone costs assumed perfect sharing;
- `hogwild_in_loop`: one env step of hogwild's worker loop at one worker, in steady state (its
  shared-memory bookkeeping made it 13% dearer than single_env's loop of the same components):
  hogwild's formula is calibrated there and extrapolates to more workers.

An env that waits (`env_step_wait_us`: its step blocks without using the CPU) adds `env_wait`,
wall time that is not CPU: the roles that step envs pay it in their wall time per env step, and
nothing of it in the cores' bound, where every other cost is CPU (components measure the
components with the wait off and the achieved wait apart). So past the cores an actor still
adds its env's rate until the learner, or the CPU that acting and hand-off take, bounds the run:
- single_env: 1 / (env_wait + T);
- actor_learner(N): min(N / (env_wait + actor), 1 / learner, C / (actor + learner)); the
  time-shared term (`actor_learner_shared`, measured with busy envs) applies only where the env
  does not wait;
- hogwild(N): min(N / (env_wait + w), C / w), w a worker's CPU per env step at the number of
  workers that are on a CPU at once (N w / (env_wait + w), up to C);
- vector_env(N): since issue 34 the envs' env_wait + trip, as above; before, the envs' side of a
  vector step was at least env_wait + their CPU and IPC, the owed learning overlapping it.
With env_wait = 0 every formula is the busy-env one above (tests/test_plan.py).

A process that idles between its updates pays more for each (`in_loop_waiting`: single_env's
loop measured with the wait on). The first seed_shape prediction took the update from a loop
that never idles, 875 us, where the runs paid 2,036 us in single_env and 1,383-2,682 us in
actor_learner's learner, and over-predicted every cell (by 9-75%). Each process's sample and
update (and its act and store) are now interpolated by its duty (the share of its time it is
busy): the waiting loop's cost at that loop's own duty or less, the busy loop's at a duty of 1,
linear between. Actors and hogwild workers wait on every env step, as single_env does; the
learner's (and vector_env's main process's) duty and its update's cost are settled together.

Past the cores, where the env waits, the CPU a role pays is not the sum of its components: on 2
cores waiting actors paid 211-301 us of CPU per env step at 8-24 actors (wake-ups, weight copies,
caches shared with more processes each) where their components summed to ~130 us, and the runs
kept 1.9 of the 2 cores busy, so the cores, not the actors' wait, bounded them: the second
prediction (shape_check) missed actor_learner at 16 and 24 actors by -25% and -35%. Each role's
CPU per env step is now measured in actor_learner's own runs where the env waits, at 4 and 12 x
the cores (`actor_learner_waiting_actors` and `_learner`, from each run's `cpu`), interpolated in
N, and the cores' bound C / (actor + learner) and the actors' N / (env_wait + actor) take it.

Every prediction names its bottleneck: the role whose rate is the minimum (or `cores` when the
time-sharing bound is). The report's `scaling` figure and `experiments.plan` both use `predict`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from architectures import registry

REGISTRY = registry.DESIGNS


class MissingCosts(ValueError):
    """The component costs lack what a design's entry needs (measured before the entry existed):
    `predict` raises it, `predict_all` leaves that design out."""


@dataclass(frozen=True)
class Prediction:
    design: str
    workers: int
    env_steps_per_sec: float
    bottleneck: str
    """The role that bounds this point: `process` (single_env: all of it), `learner`, `actors`,
    `workers`, `envs`, `main` (vector_env's serial part) or `cores` (time-sharing)."""
    oversubscribed: bool
    """More busy processes than cores."""
    rates: dict
    """Env steps/s each role alone would allow."""
    shared_measured: bool = False
    """Its time-sharing of the cores is priced from the design's own runs at that sharing (where
    the env waits, actor_learner past the cores), not assumed: `recommend` may pick it."""


def medians(costs: dict) -> dict:
    """Measured costs as experiments/components.py stores them -> what `predict` takes:
    {name: {us, p10, p90}} -> {name: us}; per-N costs {name: {N: {us, ...}}} -> {name: {N: us}};
    a group such as `in_loop` {name: {group member: {us, ...}}} -> {name: {member: us}}."""
    out = {}
    for name, value in costs.items():
        if "us" in value:
            out[name] = value["us"]
            continue
        keys = {str(k).removeprefix("json://"): v["us"] for k, v in value.items()}
        out[name] = {int(k): v for k, v in keys.items()} if all(k.isdigit() for k in keys) else keys
    _wait_cpu(costs, out)
    return out


def _wait_cpu(costs: dict, out: dict) -> None:
    """A waiting step still takes some CPU (the sleep's system calls and wake-up: ~100 us a step
    measured here): `env_wait_cpu`, its CPU beyond the plain step's, is charged as CPU and taken
    out of the wall-only wait."""
    wait, step = costs.get("env_wait"), costs.get("env_step")
    if wait and "cpu_us" in wait and step and "cpu_us" in step:
        out["env_wait_cpu"] = min(out["env_wait"], max(0.0, wait["cpu_us"] - step["cpu_us"]))


def combine(measured: list[dict]) -> dict:
    """The median of each cost over several measurements (as `medians` returns them)."""
    first = measured[0]
    out = {}
    for name, value in first.items():
        if isinstance(value, dict):
            out[name] = {k: float(np.median([m[name][k] for m in measured if k in m.get(name, {})])) for k in value}
        else:
            out[name] = float(np.median([m[name] for m in measured if name in m]))
    return out


def _loop(c: dict, duty: float = 1.0) -> dict:
    """The per-env-step components as single_env's loop pays them (`in_loop`, when measured: the
    env step and the store between updates evict what a warm, alone measurement keeps cached),
    for a process busy `duty` of its time (see `_idle_factor`)."""
    il = c.get("in_loop") or {}
    out = {"env_step": il.get("env_step", c["env_step"]) + float(c.get("env_wait_cpu", 0.0)),
           "act": il.get("act", c["act"]),
           "fold_store": il.get("replay_add", c["fold"] + c["store"]), "sample": il.get("sample", c["sample"]),
           "update": il.get("update", c["update"])}
    f = _idle_factor(c, duty)
    if f > 0:
        iw = c["in_loop_waiting"]
        for name, key in (("act", "act"), ("fold_store", "replay_add"), ("sample", "sample"), ("update", "update")):
            out[name] += f * max(0.0, iw[key] - out[name])
    return out


def waiting_duty(c: dict) -> float:
    """How busy single_env's loop is where the env waits (CPU per env step over its wall time):
    the duty at which `in_loop_waiting` was measured."""
    iw, wait = c["in_loop_waiting"], float(c.get("env_wait", 0.0)) - float(c.get("env_wait_cpu", 0.0))
    utd = float(c.get("loops_utd", 0.25))
    cpu = iw["act"] + iw["replay_add"] + utd * (iw["sample"] + iw["update"]) + c["env_step"] + float(
        c.get("env_wait_cpu", 0.0))
    return cpu / (wait + cpu)


def _idle_factor(c: dict, duty: float) -> float:
    """How much of the waiting loop's dearer act, store, sample and update a process busy `duty`
    of its time pays: all of it at the waiting loop's own duty or below, none when always busy, linear
    between. A process that sleeps between updates pays more for each: single_env's update cost
    2,036 us where the env waits 2.2 ms and 875 us where it does not, and actor_learner's learner
    1,383-2,415 us as its actors made it more or less idle (seed_shape, issue 21: the term the
    first prediction lacked). Without `in_loop_waiting` (a busy env, older plans): 0."""
    if not c.get("in_loop_waiting") or float(c.get("env_wait", 0.0)) <= 0:
        return 0.0
    low = waiting_duty(c)
    return float(min(1.0, max(0.0, (1.0 - duty) / max(1e-9, 1.0 - low))))


def _contention(c: dict, busy: float, cores: int) -> float:
    """Slowdown of each process while `busy` processes run at once: 1 alone, the measured factor
    with every core busy (`contention`), linear between."""
    full = max(1.0, float(c.get("contention", 1.0)))  # below 1 is noise: a co-runner never speeds a loop up
    if cores < 2:
        return 1.0
    share = min(1.0, max(0.0, (min(busy, cores) - 1) / (cores - 1)))
    return 1.0 + (full - 1.0) * share


def at_n(table: dict, n: int) -> float:
    """A per-N cost at n: measured, or interpolated linearly between the measured N. Beyond the
    largest N a rising cost is extrapolated from the two nearest, a falling one held at its last
    value: a cost per env step that amortises over N envs (vector_env's main process) fell 215,
    136, 96 us at 1, 2, 4 envs, and a line through the last two went below zero by 12."""
    points = sorted((int(k), float(v)) for k, v in table.items())
    if len(points) == 1:
        return points[0][1]
    for (n0, v0), (n1, v1) in zip(points, points[1:]):
        if n <= n1:
            return v0 + (v1 - v0) * (n - n0) / (n1 - n0)
    (n0, v0), (n1, v1) = points[-2:]
    return v1 + max(0.0, v1 - v0) * (n - n1) / (n1 - n0)


def _shared_finish(jobs: list[float], cores: int) -> tuple[float, float]:
    """Processor sharing: jobs (CPU microseconds, one process each) start together on `cores`;
    each of k runnable jobs runs at min(1, cores / k). Returns (first job's finish, last's)."""
    remaining = sorted((w, i) for i, w in enumerate(jobs))
    done_at, now, left = {}, 0.0, [w for w, _ in remaining]
    ids = [i for _, i in remaining]
    progress = 0.0  # CPU each still-running job has received
    for k in range(len(left)):
        running = len(left) - k
        rate = min(1.0, cores / running)
        now += (left[k] - progress) / rate
        progress = left[k]
        done_at[ids[k]] = now
    return done_at[0], max(done_at.values())


@dataclass(frozen=True)
class Setting:
    """What every design's entry reads: the components (`c`, us per call), the workers, the env's
    wait without CPU, whether a process idles on it, single_env's loop at its duty (`k`), the
    ratio, the cores and the weight period."""

    c: dict
    n: int
    wait: float
    waits: bool
    k: dict
    utd: float
    cores: int
    weight_sync_period: int

    @property
    def loop(self) -> float:
        """single_env's loop per env step: step, act, fold and store, and utd x (sample + update)."""
        k = self.k
        return k["env_step"] + k["act"] + k["fold_store"] + self.utd * (k["sample"] + k["update"])


def predict(design: str, workers: int, costs: dict, *, utd: float, cores: int,
            weight_sync_period: int = 10) -> Prediction:
    """Predicted env steps/s of `design` at `workers` workers on `cores` cores (see module doc),
    from its entry in ENTRIES (a design names its entry in architectures/registry.py; high_utd
    runs single_env's loop). `costs` holds microseconds per call: env_step, act, fold, store,
    sample, update, and for the parallel designs diagnostics, ring_write, ring_drain,
    weight_publish, act_batch {N: us}, vector_send {N: us}, vector_recv {N: us}, vector_round_trip
    {N: us}."""
    c = costs
    wait = float(c.get("env_wait", 0.0)) - float(c.get("env_wait_cpu", 0.0))  # wall time per env step, no CPU
    waits = _idle_factor(c, 0.0) > 0
    k = _loop(c, waiting_duty(c) if waits else 1.0)  # a process that steps a waiting env idles as single_env's
    names = {d.name: d.cost_model for d in REGISTRY}
    if names.get(design) not in ENTRIES:
        raise ValueError(f"design: unknown {design!r} (valid: {', '.join(DESIGNS)})")
    return ENTRIES[names[design]](design, Setting(c, workers, wait, waits, k, utd, cores, weight_sync_period))


def _single_env(design: str, s: Setting) -> Prediction:
    return Prediction(design, 1, 1e6 / (s.wait + s.loop), "process", False, {"process": 1e6 / (s.wait + s.loop)})


def _hogwild(design: str, s: Setting) -> Prediction:
    """Each worker's CPU slowed by the others on a CPU at once; its wait is its own."""
    c, n, k, wait, utd, cores = s.c, s.n, s.k, s.wait, s.utd, s.cores
    if c.get("hogwild_in_loop") and c.get("hogwild_at_cores") and cores > 1 and _loops_apply(c, utd):
        # One worker's CPU per own env step, measured alone and with `cores` workers sharing
        # the parameters; linear in the workers on a CPU at once, and the cores' bound beyond.
        wait_cpu = float(c.get("env_wait_cpu", 0.0))  # the loops were measured with the wait off
        idling = _idling(c, k, utd)
        alone, crowded = c["hogwild_in_loop"] + wait_cpu + idling, c["hogwild_at_cores"] * cores + wait_cpu + idling
        per_worker = alone
        for _ in range(3):  # the workers on a CPU at once depend on how long each one's CPU takes
            busy = min(n, cores, n * per_worker / (wait + per_worker))
            per_worker = alone + (crowded - alone) * (max(busy, 1.0) - 1) / (cores - 1)
        rates = {"workers": n * 1e6 / (wait + per_worker), "cores": cores * 1e6 / per_worker}
        return _bounded(design, n, rates, n * per_worker / (wait + per_worker) > cores)
    worker = s.loop
    if c.get("hogwild_in_loop") and _loops_apply(c, utd):  # one worker's loop as it ran: bookkeeping included
        worker = c["hogwild_in_loop"] + float(c.get("env_wait_cpu", 0.0)) + _idling(c, k, utd)  # as single_env idles
    slow = _contention(c, min(n, cores, n * worker / (wait + worker)), cores)
    rates = {"workers": n * 1e6 / (wait + worker * slow), "cores": cores * 1e6 / (worker * slow)}
    return _bounded(design, n, rates, n * worker / (wait + worker) > cores)


def _actor_learner_entry(design: str, s: Setting) -> Prediction:
    c, n, k, wait, utd, cores, period = s.c, s.n, s.k, s.wait, s.utd, s.cores, s.weight_sync_period
    if s.waits:  # the learner idles while its actors are few; the actors wait on every env step, as k's loop
        return _settled(c, lambda kl: _actor_learner(n, c, kl, wait, utd, cores, period, actors=k), "learner")
    return _actor_learner(n, c, k, wait, utd, cores, period)


def _vector_env_entry(design: str, s: Setting) -> Prediction:
    c, n, k, wait, utd, cores = s.c, s.n, s.k, s.wait, s.utd, s.cores
    model = _vector_async if c.get("vector_trip") else _vector_env  # vector_env since issue 34, or before
    if s.waits:  # the main process idles while the envs are few
        return _settled(c, lambda km: model(n, c, km, wait, utd, cores), "main")
    return model(n, c, k, wait, utd, cores)


def _vector_async(n: int, c: dict, k: dict, wait: float, utd: float, cores: int, learns: bool = True) -> Prediction:
    """vector_env since issue 34 at n envs (see module doc): the envs' rate n / (wait + round
    trip), the main process's 1 / (its CPU per env step), and the cores' C / (the envs' CPU + the
    main process's), each env step's CPU slowed by the processes busy at once (`contention`).
    `learns=False`: the acting alone (pqn's, whose learning follows its rollout)."""
    trip, env_cpu = at_n(c["vector_trip"], n), at_n(c["vector_env_cpu"], n)  # measured with the run's wait on
    main = at_n(c["vector_main"], n) + (k["fold_store"] + utd * (k["sample"] + k["update"] + c["diagnostics"])
                                        if learns else c["fold"])
    rates = {"envs": n * 1e6 / (wait + trip), "main": 1e6 / main, "cores": cores * 1e6 / (env_cpu + main)}
    slow = _contention(c, min(rates.values()) * (env_cpu + main) / 1e6, cores)
    rates = {"envs": rates["envs"], "main": rates["main"] / slow, "cores": rates["cores"] / slow}
    return _bounded("vector_env" if learns else "pqn", n, rates, n * env_cpu / (wait + trip) + 1 > cores)


def _settled(c: dict, build, role: str) -> Prediction:
    """A prediction whose `role` (the learner, vector_env's main process) pays its update at its
    own duty: build(components at a duty) and the duty it implies (the run's rate over the role's
    own bound), settled together from an idle start."""
    duty = 0.0
    for _ in range(20):
        p = build(_loop(c, duty))
        duty = min(1.0, p.env_steps_per_sec / p.rates[role])  # the role's share of its time busy
    return p


def _vector_env(n: int, c: dict, k: dict, wait: float, utd: float, cores: int) -> Prediction:
    """vector_env at n envs from the loop components `k` (see module doc)."""
    parts = _vector_parts(n, c, k, utd, cores, wait)
    step = parts["step"]
    if c.get("vector_round_trip_learning") and _loops_apply(c, utd):
        # The loop's act and round trip (send, the owed learning beside the envs' steps,
        # receive) as measured in that loop; the components alone missed them by up to 35%.
        # A waiting env's reply comes no sooner than its wait after the send.
        trip = at_n(c["vector_round_trip_learning"], n)
        if wait:  # ... and no sooner than the owed learning, at this loop's cost of an update, is done
            learn = n * utd * (k["sample"] + k["update"] + c["diagnostics"])
            trip = max(trip, wait + at_n(c["vector_round_trip"], n),
                       at_n(c["vector_send"], n) + learn + at_n(c["vector_recv"], n))
        step = at_n(c["vector_act_in_loop"], n) + trip + n * (k["fold_store"] + utd * c["diagnostics"])
    rates = {**parts["rates"], "cores": n * 1e6 / step}
    return Prediction("vector_env", n, n * 1e6 / step, parts["bottleneck"], n + 1 > cores, rates)


def _idling(c: dict, k: dict, utd: float) -> float:
    """What a loop with components `k` pays per env step beyond the busy loop's."""
    busy = _loop(c)
    return (k["act"] - busy["act"] + k["fold_store"] - busy["fold_store"]
            + utd * (k["sample"] - busy["sample"] + k["update"] - busy["update"]))


def _actor_learner(n: int, c: dict, k: dict, wait: float, utd: float, cores: int, weight_sync_period: int,
                   actors: dict | None = None) -> Prediction:
    """actor_learner at n actors from the learner's loop components `k` (and the actors', when
    they differ: `actors`; see module doc)."""
    ka = actors or k
    actor = ka["env_step"] + ka["act"] + ka["fold_store"] - c["store"] + c["ring_write"]  # writes a ring, not a replay
    learner = utd * (k["sample"] + k["update"] + c["diagnostics"] + c["weight_publish"] / weight_sync_period) \
        + c["ring_drain"]
    shared = c.get("actor_learner_shared")
    if n + 1 > cores and shared and _loops_apply(c, utd) and wait == 0:
        # More processes than cores, all busy: each role's CPU per env step as it paid
        # time-sharing the cores (measured at `cores` actors), contention included.
        actor, learner = shared["actors"], shared["learner"]
        rates = {"actors": n * 1e6 / actor, "learner": 1e6 / learner, "cores": cores * 1e6 / (actor + learner)}
        return _bounded("actor_learner", n, rates, True)
    measured = c.get("actor_learner_waiting_actors")
    if wait > 0 and measured and c.get("actor_learner_waiting_learner"):
        # Past the cores, where the env waits: the CPU each role paid per env step in
        # actor_learner's own runs at a few actor counts (the actors' grows with their number),
        # interpolated in N; the cores bound at that CPU, contention included (see module doc).
        actor_cpu = max(actor, at_n(measured, n))
        learner_cpu = at_n(c["actor_learner_waiting_learner"], n)
        rates = {"actors": n * 1e6 / (wait + actor_cpu), "learner": 1e6 / learner,
                 "cores": cores * 1e6 / (actor_cpu + learner_cpu)}
        point = _bounded("actor_learner", n, rates, n * actor_cpu / (wait + actor_cpu) + 1 > cores)
        return dataclasses.replace(point, shared_measured=True)
    rates = {"actors": n * 1e6 / (wait + actor), "learner": 1e6 / learner,
             "cores": cores * 1e6 / (actor + learner)}
    busy = min(rates.values()) * (actor + learner) / 1e6  # processes' worth of CPU in use
    slow = _contention(c, busy, cores)
    rates = {"actors": n * 1e6 / (wait + actor * slow), "learner": rates["learner"] / slow,
             "cores": rates["cores"] / slow}
    return _bounded("actor_learner", n, rates, n * actor / (wait + actor) + 1 > cores)


def _loops_apply(c: dict, utd: float) -> bool:
    """Whether the loops measured whole (hogwild_in_loop, vector_round_trip_learning) stand for a
    run at `utd`: they were measured learning at `loops_utd` (older measurements do not say: then
    at any utd > 0); elsewhere the model builds the loop from its components."""
    measured = c.get("loops_utd")
    return utd > 0 and (measured is None or abs(float(measured) - utd) < 1e-9)


def _vector_parts(n: int, c: dict, k: dict, utd: float, cores: int, wait: float = 0.0) -> dict:
    """vector_env's time per vector step at n envs, from the components: the serial part (act for
    all envs, send, receive, store), then the owed learning and the n env steps at once, sharing
    the cores; and which of the two finishes last."""
    learn = n * utd * (k["sample"] + k["update"] + c["diagnostics"])  # owed per vector step, overlapped
    send, recv = at_n(c["vector_send"], n), at_n(c["vector_recv"], n)
    # The envs' side of a round trip: their step plus the IPC latency, as measured with the main
    # process idle; under learning it time-shares the cores with the learner.
    env_side = max(k["env_step"], at_n(c["vector_round_trip"], n) - send - recv)
    serial = at_n(c["act_batch"], n) + send + recv + n * k["fold_store"]
    slow = 1.0
    for _ in range(2):  # the busy processes slow each other; settle it in two passes
        learner_done, envs_done = _shared_finish([learn * slow] + [env_side * slow] * n, cores)
        envs_done = max(envs_done, wait + env_side * slow)  # the wait overlaps everything but their reply
        step = serial * slow + max(learner_done, envs_done)
        slow = _contention(c, (serial + learn + n * env_side) / step, cores)
    bottleneck = "learner" if learner_done >= envs_done else "envs"
    if n + 1 > cores and envs_done > env_side * slow * 1.05 and learner_done < envs_done:
        bottleneck = "cores"
    return {"step": step, "bottleneck": bottleneck,
            "rates": {"main": n * 1e6 / (serial + learn), "envs": n * 1e6 / (serial + wait + env_side)}}


def over_a_run(design: str, workers: int, costs: dict, *, utd: float, cores: int, total_env_steps: int,
               learning_starts: int, weight_sync_period: int = 10) -> float:
    """Predicted env steps/s averaged over a whole run: its first `learning_starts` env steps go
    without updates (as fast as utd 0 allows), the rest at the run's utd. What a run's
    `env_steps_per_sec` (env steps over training seconds) is to be compared with."""
    kwargs = dict(cores=cores, weight_sync_period=weight_sync_period)
    fast = predict(design, workers, costs, utd=0.0, **kwargs).env_steps_per_sec
    steady = predict(design, workers, costs, utd=utd, **kwargs).env_steps_per_sec
    warm = min(learning_starts, total_env_steps)
    return total_env_steps / (warm / fast + (total_env_steps - warm) / steady)


def _bounded(design: str, n: int, rates: dict, oversubscribed: bool) -> Prediction:
    role = min(rates, key=rates.get)
    return Prediction(design, n, rates[role], role, oversubscribed, rates)


WAITING_WORKERS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
"""Worker counts explored where the env waits: past the cores, up to the suite's limit of 64 on
a small machine (architectures/core/limits.py)."""


def worker_counts(costs: dict, cores: int) -> list[int]:
    """1 .. cores workers and 2 x cores; where the env waits, WAITING_WORKERS too: a waiting
    actor leaves its core to others, so the useful count can be many times the cores."""
    counts = set(range(1, cores + 1)) | {2 * cores}
    if float(costs.get("env_wait", 0.0)) > 0:
        counts |= set(WAITING_WORKERS)
    return sorted(counts)


def _pqn(design: str, s: Setting) -> Prediction:
    """pqn at n envs: a rollout's acting, then its learning, one after the other (nothing overlaps
    them). Since issue 34 the acting is vector_env's round trip with nothing to learn
    (`_vector_async`: the envs' rate, the main process's acting and per-env books, the cores);
    before, a lockstep vector step with nothing owed (`_vector_parts` at utd 0, no replay store);
    the learning is `rollout_learn` {N: us per env step}, the rollout's targets
    and updates timed alone with pqn's own code (experiments/components_alone.py `rollout_costs`).
    Left out: the envs that wait for the slowest at the rollout's end; a run that learns nothing
    yet (utd 0, before learning_starts) pays no learning."""
    c, n = s.c, s.n
    if "rollout_learn" not in c:
        raise MissingCosts("pqn: these component costs lack rollout_learn (pqn's learning, measured since issue 23); "
                         "measure them again with experiments.components or experiments.plan")
    if c.get("vector_trip"):  # since issue 34: the envs answer as each is ready, the acting's bound as vector_env's
        acting = 1e6 / _vector_async(n, c, s.k, s.wait, 0.0, s.cores, learns=False).env_steps_per_sec
    else:  # lockstep AsyncVectorEnv, as before issue 34
        acting = _vector_parts(n, c, dict(s.k, fold_store=0.0), 0.0, s.cores, s.wait)["step"] / n  # us per env step
    learning = at_n(c["rollout_learn"], n) if s.utd > 0 else 0.0
    rates = {"envs": 1e6 / acting, "learner": 1e6 / learning if learning else float("inf")}
    role = "learner" if learning > acting else "envs"
    return Prediction(design, n, 1e6 / (acting + learning), role, n + 1 > s.cores, rates)


ENTRIES = {"single_env": _single_env, "actor_learner": _actor_learner_entry, "vector_env": _vector_env_entry,
           "hogwild": _hogwild, "pqn": _pqn}
"""A design's cost-model entry (architectures/registry.py `cost_model`) -> the function that predicts it."""
DESIGNS = tuple(d.name for d in REGISTRY if d.cost_model == d.name and d.cost_model in ENTRIES)
"""The designs predicted, in the registry's order; high_utd runs single_env's loop (its entry is
single_env's): at the same utd its speed is single_env's."""


def predict_all(costs: dict, *, utd: float, cores: int, weight_sync_period: int = 10,
                workers: list[int] | None = None) -> list[Prediction]:
    """Every design at `workers` (default `worker_counts`; single_env once; none of a design whose
    entry's inputs the costs lack: `MissingCosts`). Where the env waits,
    each design's counts stop one past the first whose rate gains under 2% on the count before:
    the learner (or the cores) bound it there, and more workers only cost memory."""
    counts = workers or worker_counts(costs, cores)
    out = [predict("single_env", 1, costs, utd=utd, cores=cores)]
    for design in DESIGNS[1:]:
        points: list[Prediction] = []
        for n in counts:
            try:
                points.append(predict(design, n, costs, utd=utd, cores=cores, weight_sync_period=weight_sync_period))
            except MissingCosts:  # components measured before this design's entry: no prediction for it
                break
            flat = (len(points) >= 3 and points[-2].env_steps_per_sec < 1.02 * points[-3].env_steps_per_sec
                    and n > 2 * cores)
            if workers is None and flat:
                break
        out += points
    return out


def recommend(predictions: list[Prediction]) -> tuple[Prediction, Prediction]:
    """The fastest point that does not oversubscribe the cores (or whose time-sharing of them the
    model priced from the design's own runs: `shared_measured`), and the runner-up of another
    design (or the same design at other workers when only one design is in the running). Only
    designs that learn from a replay, as single_env does, are recommended on speed: pqn learns
    differently (its return after N env steps is not DQN's), so its speed is shown, not ranked."""
    fitting = sorted((p for p in predictions if (not p.oversubscribed or p.shared_measured)
                      and registry.design(p.design).replay), key=lambda p: -p.env_steps_per_sec)
    best = fitting[0]
    others = [p for p in fitting[1:] if p.design != best.design] or fitting[1:]
    return best, others[0]
