"""The terms every design's formula in cost_designs.py is built from: single_env's loop as a run
pays it (at a process's duty), the slowdown of co-running processes, per-N costs, processor
sharing, and the Prediction each formula returns. docs/plan-and-cost-model.md says why each term is there."""

from __future__ import annotations

from dataclasses import dataclass


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


def loop_costs(c: dict, duty: float = 1.0) -> dict:
    """The per-env-step components as single_env's loop pays them (`in_loop`, when measured: the
    env step and the store between updates evict what a warm, alone measurement keeps cached),
    for a process busy `duty` of its time (see `idle_factor`)."""
    il = c.get("in_loop") or {}
    out = {"env_step": il.get("env_step", c["env_step"]) + float(c.get("env_wait_cpu", 0.0)),
           "act": il.get("act", c["act"]),
           "fold_store": il.get("replay_add", c["fold"] + c["store"]), "sample": il.get("sample", c["sample"]),
           "update": il.get("update", c["update"])}
    f = idle_factor(c, duty)
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


def idle_factor(c: dict, duty: float) -> float:
    """How much of the waiting loop's dearer act, store, sample and update a process busy `duty`
    of its time pays: all of it at the waiting loop's own duty or below, none when always busy, linear
    between: a process that sleeps between updates pays more for each (docs/plan-and-cost-model.md,
    "How the model got its terms"). Without `in_loop_waiting` (a busy env, older plans): 0."""
    if not c.get("in_loop_waiting") or float(c.get("env_wait", 0.0)) <= 0:
        return 0.0
    low = waiting_duty(c)
    return float(min(1.0, max(0.0, (1.0 - duty) / max(1e-9, 1.0 - low))))


def idling_cost(c: dict, k: dict, utd: float) -> float:
    """What a loop with components `k` pays per env step beyond the busy loop's."""
    busy = loop_costs(c)
    return (k["act"] - busy["act"] + k["fold_store"] - busy["fold_store"]
            + utd * (k["sample"] - busy["sample"] + k["update"] - busy["update"]))


def contention(c: dict, busy: float, cores: int) -> float:
    """Slowdown of each process while `busy` processes run at once: 1 alone, the measured factor
    with every core busy (`contention`), linear between."""
    full = max(1.0, float(c.get("contention", 1.0)))  # below 1 is noise: a co-runner never speeds a loop up
    if cores < 2:
        return 1.0
    share = min(1.0, max(0.0, (min(busy, cores) - 1) / (cores - 1)))
    return 1.0 + (full - 1.0) * share


def measured_at(value, cores: int) -> tuple[int, float]:
    """(the count a loop was measured at, its cost): a per-N table of one count, as measure() writes
    a loop run at the cores it measured on (plan measures on at most 16 of them, experiments/plan/measure.py
    MEASURE_CORES), or a bare cost, as earlier records stored one measured at `cores`."""
    if isinstance(value, dict):
        [(n, us)] = value.items()
        return int(n), float(us)
    return cores, float(value)


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


def shared_finish(jobs: list[float], cores: int) -> tuple[float, float]:
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


def loops_apply(c: dict, utd: float) -> bool:
    """Whether the loops measured whole (hogwild_in_loop, vector_round_trip_learning) stand for a
    run at `utd`: they were measured learning at `loops_utd` (older measurements do not say: then
    at any utd > 0); elsewhere the model builds the loop from its components."""
    measured = c.get("loops_utd")
    return utd > 0 and (measured is None or abs(float(measured) - utd) < 1e-9)


def bounded(design: str, n: int, rates: dict, oversubscribed: bool) -> Prediction:
    """The prediction a design's slowest role sets: its rate is the least of `rates`, that role named."""
    role = min(rates, key=rates.get)
    return Prediction(design, n, rates[role], role, oversubscribed, rates)


def settled(c: dict, build, role: str) -> Prediction:
    """A prediction whose `role` (the learner, vector_env's main process) pays its update at its
    own duty: build(components at a duty) and the duty it implies (the run's rate over the role's
    own bound), settled together from an idle start."""
    duty = 0.0
    for _ in range(20):
        p = build(loop_costs(c, duty))
        duty = min(1.0, p.env_steps_per_sec / p.rates[role])  # the role's share of its time busy
    return p
