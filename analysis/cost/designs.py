"""Each design's formula in the cost model: env steps/s at N workers from the component costs,
bounded by its slowest role (docs/plan-and-cost-model.md gives each formula and how it got its terms).
A design names its entry in architectures/registry.py (`cost_model`); ENTRIES maps it here."""

from __future__ import annotations

import dataclasses

from analysis.cost.terms import (MissingCosts, Prediction, Setting, bounded, contention, idling_cost, loops_apply,
                                 measured_at, settled, shared_finish, at_n)


def _single_env(design: str, s: Setting) -> Prediction:
    return Prediction(design, 1, 1e6 / (s.wait + s.loop), "process", False, {"process": 1e6 / (s.wait + s.loop)})


def _hogwild(design: str, s: Setting) -> Prediction:
    """Each worker's CPU slowed by the others on a CPU at once; its wait is its own."""
    c, n, k, wait, utd, cores = s.c, s.n, s.k, s.wait, s.utd, s.cores
    crowd, at_crowd = measured_at(c["hogwild_at_cores"], cores) if c.get("hogwild_at_cores") else (1, 0.0)
    if c.get("hogwild_in_loop") and crowd > 1 and cores > 1 and loops_apply(c, utd):
        # One worker's CPU per own env step, measured alone and with `crowd` workers (the cores
        # plan measured on) sharing the parameters; linear in the workers on a CPU at once, and
        # the cores' bound beyond.
        wait_cpu = float(c.get("env_wait_cpu", 0.0))  # the loops were measured with the wait off
        idling = idling_cost(c, k, utd)
        alone, crowded = c["hogwild_in_loop"] + wait_cpu + idling, at_crowd * crowd + wait_cpu + idling
        per_worker = alone
        for _ in range(3):  # the workers on a CPU at once depend on how long each one's CPU takes
            busy = min(n, cores, n * per_worker / (wait + per_worker))
            per_worker = alone + (crowded - alone) * (max(busy, 1.0) - 1) / (crowd - 1)
        rates = {"workers": n * 1e6 / (wait + per_worker), "cores": cores * 1e6 / per_worker}
        return bounded(design, n, rates, n * per_worker / (wait + per_worker) > cores)
    worker = s.loop
    if c.get("hogwild_in_loop") and loops_apply(c, utd):  # one worker's loop as it ran: bookkeeping included
        worker = c["hogwild_in_loop"] + float(c.get("env_wait_cpu", 0.0)) + idling_cost(c, k, utd)  # as single_env idles
    slow = contention(c, min(n, cores, n * worker / (wait + worker)), cores)
    rates = {"workers": n * 1e6 / (wait + worker * slow), "cores": cores * 1e6 / (worker * slow)}
    return bounded(design, n, rates, n * worker / (wait + worker) > cores)


def _actor_learner_entry(design: str, s: Setting) -> Prediction:
    c, n, k, wait, utd, cores, period = s.c, s.n, s.k, s.wait, s.utd, s.cores, s.weight_sync_period
    if s.waits:  # the learner idles while its actors are few; the actors wait on every env step, as k's loop
        return settled(c, lambda kl: _actor_learner(n, c, kl, wait, utd, cores, period, actors=k), "learner")
    return _actor_learner(n, c, k, wait, utd, cores, period)


def learner_cost(c: dict, k: dict, utd: float, weight_sync_period: int) -> float:
    """actor_learner's learner, us per env step: utd x (sample + update + diagnostics + publish / period)
    + the hand-off drain (also plan's one-line ceiling, model.learner_ceiling)."""
    return utd * (k["sample"] + k["update"] + c["diagnostics"] + c["weight_publish"] / weight_sync_period) \
        + c["ring_drain"]


def _actor_learner(n: int, c: dict, k: dict, wait: float, utd: float, cores: int, weight_sync_period: int,
                   actors: dict | None = None) -> Prediction:
    """actor_learner at n actors from the learner's loop components `k` (and the actors', when
    they differ: `actors`; docs/plan-and-cost-model.md)."""
    ka = actors or k
    actor = ka["env_step"] + ka["act"] + ka["fold_store"] - c["store"] + c["ring_write"]  # writes a ring, not a replay
    learner = learner_cost(c, k, utd, weight_sync_period)
    shared = c.get("actor_learner_shared")
    if n + 1 > cores and shared and loops_apply(c, utd) and wait == 0:
        # More processes than cores, all busy: each role's CPU per env step as it paid
        # time-sharing the cores (measured at `cores` actors), contention included.
        actor, learner = shared["actors"], shared["learner"]
        rates = {"actors": n * 1e6 / actor, "learner": 1e6 / learner, "cores": cores * 1e6 / (actor + learner)}
        return bounded("actor_learner", n, rates, True)
    measured = c.get("actor_learner_waiting_actors")
    if wait > 0 and measured and c.get("actor_learner_waiting_learner"):
        # Past the cores, where the env waits: the CPU each role paid per env step in
        # actor_learner's own runs at a few actor counts (the actors' grows with their number),
        # interpolated in N; the cores bound at that CPU, contention included (docs/plan-and-cost-model.md).
        actor_cpu = max(actor, at_n(measured, n))
        learner_cpu = at_n(c["actor_learner_waiting_learner"], n)
        rates = {"actors": n * 1e6 / (wait + actor_cpu), "learner": 1e6 / learner,
                 "cores": cores * 1e6 / (actor_cpu + learner_cpu)}
        point = bounded("actor_learner", n, rates, n * actor_cpu / (wait + actor_cpu) + 1 > cores)
        return dataclasses.replace(point, shared_measured=True)
    rates = {"actors": n * 1e6 / (wait + actor), "learner": 1e6 / learner,
             "cores": cores * 1e6 / (actor + learner)}
    busy = min(rates.values()) * (actor + learner) / 1e6  # processes' worth of CPU in use
    slow = contention(c, busy, cores)
    rates = {"actors": n * 1e6 / (wait + actor * slow), "learner": rates["learner"] / slow,
             "cores": rates["cores"] / slow}
    return bounded("actor_learner", n, rates, n * actor / (wait + actor) + 1 > cores)


def _vector_env_entry(design: str, s: Setting) -> Prediction:
    c, n, k, wait, utd, cores = s.c, s.n, s.k, s.wait, s.utd, s.cores
    model = _vector_async if c.get("vector_trip") else _vector_env  # envs that answer as each is ready, or lockstep
    if s.waits:  # the main process idles while the envs are few
        return settled(c, lambda km: model(n, c, km, wait, utd, cores), "main")
    return model(n, c, k, wait, utd, cores)


def _vector_async(n: int, c: dict, k: dict, wait: float, utd: float, cores: int, learns: bool = True) -> Prediction:
    """vector_env at n envs answering as each is ready (docs/plan-and-cost-model.md): the envs' rate n / (wait + round
    trip), the main process's 1 / (its CPU per env step), and the cores' C / (the envs' CPU + the
    main process's), each env step's CPU slowed by the processes busy at once (`contention`).
    `learns=False`: the acting alone (pqn's, whose learning follows its rollout)."""
    trip, env_cpu = at_n(c["vector_trip"], n), at_n(c["vector_env_cpu"], n)  # measured with the run's wait on
    main = at_n(c["vector_main"], n) + (k["fold_store"] + utd * (k["sample"] + k["update"] + c["diagnostics"])
                                        if learns else c["fold"])
    rates = {"envs": n * 1e6 / (wait + trip), "main": 1e6 / main, "cores": cores * 1e6 / (env_cpu + main)}
    slow = contention(c, min(rates.values()) * (env_cpu + main) / 1e6, cores)
    rates = {"envs": rates["envs"], "main": rates["main"] / slow, "cores": rates["cores"] / slow}
    return bounded("vector_env" if learns else "pqn", n, rates, n * env_cpu / (wait + trip) + 1 > cores)


def _vector_env(n: int, c: dict, k: dict, wait: float, utd: float, cores: int) -> Prediction:
    """vector_env at n envs from the loop components `k` (lockstep, as at dc629ec; docs/plan-and-cost-model.md)."""
    parts = _vector_parts(n, c, k, utd, cores, wait)
    step = parts["step"]
    if c.get("vector_round_trip_learning") and loops_apply(c, utd):
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
        learner_done, envs_done = shared_finish([learn * slow] + [env_side * slow] * n, cores)
        envs_done = max(envs_done, wait + env_side * slow)  # the wait overlaps everything but their reply
        step = serial * slow + max(learner_done, envs_done)
        slow = contention(c, (serial + learn + n * env_side) / step, cores)
    bottleneck = "learner" if learner_done >= envs_done else "envs"
    if n + 1 > cores and envs_done > env_side * slow * 1.05 and learner_done < envs_done:
        bottleneck = "cores"
    return {"step": step, "bottleneck": bottleneck,
            "rates": {"main": n * 1e6 / (serial + learn), "envs": n * 1e6 / (serial + wait + env_side)}}


def _pqn(design: str, s: Setting) -> Prediction:
    """pqn at n envs: a rollout's acting, then its learning, one after the other (nothing overlaps
    them). Since the envs answer as each is ready, the acting is vector_env's round trip with nothing to learn
    (`_vector_async`: the envs' rate, the main process's acting and per-env books, the cores);
    before, a lockstep vector step with nothing owed (`_vector_parts` at utd 0, no replay store);
    the learning is `rollout_learn` {N: us per env step}, the rollout's targets
    and updates timed alone with pqn's own code (experiments/components/alone.py `rollout_costs`).
    Left out: the envs that wait for the slowest at the rollout's end; a run that learns nothing
    yet (utd 0, before learning_starts) pays no learning."""
    c, n = s.c, s.n
    if "rollout_learn" not in c:
        raise MissingCosts("pqn: these component costs lack rollout_learn (pqn's learning, measured since e796f9f); "
                         "measure them again with experiments.components or experiments.plan")
    if c.get("vector_trip"):  # the envs answer as each is ready, the acting's bound as vector_env's
        acting = 1e6 / _vector_async(n, c, s.k, s.wait, 0.0, s.cores, learns=False).env_steps_per_sec
    else:  # lockstep AsyncVectorEnv, as at dc629ec
        acting = _vector_parts(n, c, dict(s.k, fold_store=0.0), 0.0, s.cores, s.wait)["step"] / n  # us per env step
    learning = at_n(c["rollout_learn"], n) if s.utd > 0 else 0.0
    rates = {"envs": 1e6 / acting, "learner": 1e6 / learning if learning else float("inf")}
    role = "learner" if learning > acting else "envs"
    return Prediction(design, n, 1e6 / (acting + learning), role, n + 1 > s.cores, rates)


ENTRIES = {"single_env": _single_env, "actor_learner": _actor_learner_entry, "vector_env": _vector_env_entry,
           "hogwild": _hogwild, "pqn": _pqn}
"""A design's cost-model entry (architectures/registry.py `cost_model`) -> the function that predicts it."""
