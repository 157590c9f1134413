"""The cost model: env steps/s of every design at N workers, from component costs measured alone
(experiments/components/measure.py) and the machine's cores, naming the role that bounds each point; what
`experiments.plan` recommends from and the `scaling` figure predicts with. The formulas are in
cost_designs.py, their shared terms in cost_terms.py; docs/plan-and-cost-model.md states them and
tells how the model got its terms."""

from __future__ import annotations

import numpy as np

from analysis.cost.designs import ENTRIES, learner_cost
from analysis.cost.terms import (MissingCosts, Prediction, Setting, idle_factor, loop_costs,  # noqa: F401
                                 shared_finish, at_n, waiting_duty)
from architectures import registry

REGISTRY = registry.DESIGNS


def medians(costs: dict, at: str = "us") -> dict:
    """Measured costs as experiments/components/measure.py stores them -> what `predict` takes:
    {name: {us, p10, p90}} -> {name: us}; per-N costs {name: {N: {us, ...}}} -> {name: {N: us}};
    a group such as `in_loop` {name: {group member: {us, ...}}} -> {name: {member: us}}. `at="p10"`
    or `"p90"` takes each cost's 10th or 90th percentile over its repeats instead of its median,
    where it was stored (else its median): the costs `interval` predicts with."""
    out = {}
    for name, value in costs.items():
        if "us" in value:
            out[name] = value.get(at, value["us"])
            continue
        keys = {str(k).removeprefix("json://"): v.get(at, v["us"]) for k, v in value.items()}
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


def predict(design: str, workers: int, costs: dict, *, utd: float, cores: int,
            weight_sync_period: int = 10) -> Prediction:
    """Predicted env steps/s of `design` at `workers` workers on `cores` cores (docs/plan-and-cost-model.md),
    from its entry in ENTRIES (a design names its entry in architectures/registry.py; high_utd
    runs single_env's loop). `costs` holds microseconds per call: env_step, act, fold, store,
    sample, update, and for the parallel designs diagnostics, ring_write, ring_drain,
    weight_publish, act_batch {N: us}, vector_send {N: us}, vector_recv {N: us}, vector_round_trip
    {N: us}."""
    c = costs
    wait = float(c.get("env_wait", 0.0)) - float(c.get("env_wait_cpu", 0.0))  # wall time per env step, no CPU
    waits = idle_factor(c, 0.0) > 0
    k = loop_costs(c, waiting_duty(c) if waits else 1.0)  # a process that steps a waiting env idles as single_env's
    names = {d.name: d.cost_model for d in REGISTRY}
    if names.get(design) not in ENTRIES:
        raise ValueError(f"design: unknown {design!r} (valid: {', '.join(DESIGNS)})")
    return ENTRIES[names[design]](design, Setting(c, workers, wait, waits, k, utd, cores, weight_sync_period))


DESIGNS = tuple(d.name for d in REGISTRY if d.cost_model == d.name and d.cost_model in ENTRIES)
"""The designs predicted, in the registry's order; high_utd runs single_env's loop (its entry is
single_env's): at the same utd its speed is single_env's."""


def over_a_run(design: str, workers: int, costs: dict, *, utd: float, cores: int, total_env_steps: int,
               learning_starts: int, weight_sync_period: int = 10) -> float:
    """Predicted env steps/s averaged over a whole run: its first `learning_starts` env steps go
    without updates (as fast as utd 0 allows), the rest at the run's utd. What a run's
    `env_steps_per_sec` (env steps over training seconds) is to be compared with."""
    kwargs = dict(cores=cores, weight_sync_period=weight_sync_period)
    steady = predict(design, workers, costs, utd=utd, **kwargs).env_steps_per_sec
    # Without updates a run does strictly less work, so it is never slower; the model's utd-0 path can
    # read slower where a loop was measured only at the run's utd (hogwild's) and the two measurements
    # disagree (a plan beside another test: 1 confirming run in a CI run of the suite).
    fast = max(predict(design, workers, costs, utd=0.0, **kwargs).env_steps_per_sec, steady)
    warm = min(learning_starts, total_env_steps)
    # never below steady: the harmonic mean of two (nearly) equal rates rounds an ulp below them (CI, 3339113)
    return max(steady, total_env_steps / (warm / fast + (total_env_steps - warm) / steady))


def learner_ceiling(costs: dict, *, utd: float, weight_sync_period: int = 10) -> tuple[float, dict[str, float]]:
    """The most env steps/s one learner can serve, busy all the time with cores to spare: actor_learner's
    learner term, 1 / (utd x (update + sample + diagnostics + publish / period) + hand-off drain), and each
    part in us per env step. The practitioner's one-line ceiling: past it, more actors add nothing."""
    k = loop_costs(costs)
    try:
        rate = 1e6 / learner_cost(costs, k, utd, weight_sync_period)  # the model's own learner term
    except KeyError as missing:
        raise MissingCosts(f"the learner's ceiling needs {missing.args[0]}") from None
    parts = {"update": utd * k["update"], "sample": utd * k["sample"], "diagnostics": utd * costs["diagnostics"],
             "weight publish": utd * costs["weight_publish"] / weight_sync_period, "hand-off drain": costs["ring_drain"]}
    return rate, parts


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


def intervals(costs: dict, predictions: list[Prediction], **kwargs) -> dict[tuple[str, int], tuple[float, float]]:
    """Each prediction's interval from its components' own spread: the same design and workers
    predicted with every cost at its 90th percentile over its repeats (the slow end) and at its 10th
    (the fast end), as measured components store them (`kwargs`: predict_all's utd, cores, ...).
    An interval is never narrower than its median point."""
    ends = {at: {(p.design, p.workers): p.env_steps_per_sec
                 for p in predict_all(medians(costs, at), workers=sorted({p.workers for p in predictions}), **kwargs)}
            for at in ("p90", "p10")}
    out = {}
    for p in predictions:
        values = [p.env_steps_per_sec] + [ends[at].get((p.design, p.workers), p.env_steps_per_sec) for at in ends]
        out[(p.design, p.workers)] = (min(values), max(values))
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
