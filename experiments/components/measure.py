"""What each piece of the designs costs on this machine, measured warm and alone, with spread.

    python -m experiments.components with cartpole env_step_cost_us=1000     # a tracked run
    python -m experiments.plan with env_id=my_envs:MyEnv-v0                   # uses `measure`

For one env and learner config: the env step (resets amortised over the episodes), one greedy
action, batched greedy actions for N observations, the n-step fold and the replay store per
step, one replay sample and one update at the configured network and batch, the policy-lag
diagnostics per update, pqn's learning per env step at N envs (a rollout's Q(lambda) targets
and updates), the hand-off per transition through a shared-memory ring (the actor's
write, the learner's drain into the replay), a weight publication, and vector_env's round trip
through its env processes at N envs (per env step: command to answer, the main process's CPU,
an env process's CPU); on
CUDA, where present, the update with its host-to-device copy. Each cost is the median over
repeated timed blocks, with their p10 and p90: the inputs of analysis/cost/model.py.

`measure` puts together alone.py (each piece warm and alone), loops.py (as the loops pay
them, and the median of repeated passes) and roles.py (the
multi-process designs' loops and roles, run as themselves).
"""

from __future__ import annotations

import sys

from architectures.core.config import DQNConfig
from experiments.components.alone import Bench, acting_costs, env_costs, hand_off_costs, learning_costs, rollout_costs
from experiments.components.loops import ONE_PASS_BELOW_S, contention, in_loop, median_repeat, passes, vector_costs, vector_sizes
from experiments.components.roles import design_in_loop, shared_roles, waiting_counts, waiting_roles


def measure(cfg: DQNConfig, *, cores: int, budget_s: float = 40.0, log=print) -> dict:
    """Every component's cost for `cfg` (us per call, with spread). `budget_s` paces the blocks."""
    import torch

    torch.set_num_threads(cfg.torch_threads)
    wait_us, cfg = cfg.env_step_wait_us, cfg.replace(env_step_wait_us=0.0)  # the wait is measured apart
    bench = Bench.open(cfg)
    costs = env_costs(bench, wait_us, budget_s, log)
    own_wait = own_env_wait(costs, log)  # the env's own blocking (a user env's simulator, socket): not CPU
    costs.update(acting_costs(bench, vector_sizes(cores), log))
    costs.update(learning_costs(bench, budget_s, log))
    costs.update(hand_off_costs(bench, log))
    costs.update(rollout_costs(bench, vector_sizes(cores), log))
    bench.env.close()
    costs.update(loop_costs(bench, cores, wait_us, budget_s, log, own_wait))
    costs.update(role_costs(cfg, cores, wait_us, budget_s, log, own_wait))
    if own_wait:
        without_own_wait(costs, own_wait)
    costs["contention"] = contention(cfg, cores, budget_s * 0.05)
    log(f"  single_env's loop with a loop like it on every other core: {costs['contention']['us']:.2f}x its time "
        "alone")
    return costs


OWN_WAIT_MIN_US, OWN_WAIT_SHARE = 50.0, 0.2
"""An env step's wall time beyond its CPU time counts as the env's own wait when it is over both
50 us and a fifth of the step: a plain CartPole or MinAtar step's wall and CPU differ by a few us."""


def own_env_wait(costs: dict, log) -> float:
    """The part of the env step that blocks without CPU, measured in the process that steps it
    (wall time against this thread's CPU time), with no config key: the env step's cost becomes its
    CPU, and the rest joins `env_wait`, wall time that is not CPU, as `env_step_wait_us` would. 0
    where the step is (nearly) all CPU. A mixed step is modelled as its mix. Time the thread spent
    queued for a CPU (another process on its core) is neither, and is left out of the wait."""
    step = costs["env_step"]
    own = step["us"] - step["cpu_us"] - step.get("queued_us", 0.0)
    if own <= max(OWN_WAIT_MIN_US, OWN_WAIT_SHARE * step["us"]):
        return 0.0
    scale = (step["us"] - own) / step["us"]  # the step's work (and any queueing) without the wait
    costs["env_step"] = {**step, "us": step["us"] - own, "p10": step["p10"] * scale, "p90": step["p90"] * scale,
                         "wall_us": step["us"]}
    wait = costs.get("env_wait") or {"us": 0.0, "p10": 0.0, "p90": 0.0, "cpu_us": step["cpu_us"]}
    costs["env_wait"] = {**wait, "us": wait["us"] + own, "p10": wait["p10"] + own, "p90": wait["p90"] + own,
                         "own_us": own}
    log(f"  the env step blocks: {own:,.1f} of its {step['us']:,.1f} us are neither CPU nor queued for one; "
        f"modelled as a wait of {own:,.1f} us and {step['us'] - own:,.1f} us of work")
    return own


def without_own_wait(costs: dict, own: float) -> None:
    """The loops measured as they run hold the env's own wait in their wall times, where the model
    wants CPU (the wait is `env_wait`, added once): take it out of single_env's loop's env step, of
    hogwild's loop per env step (one worker waits it whole; N workers wait theirs at once) and
    of vector_env's round trips (`vector_trip`: each env's trip held its wait). The waiting loop (`in_loop_waiting`) is the
    loop as measured."""
    costs.setdefault("in_loop_waiting", {k: dict(v) for k, v in costs["in_loop"].items()})
    step = costs["in_loop"]["env_step"]
    costs["in_loop"]["env_step"] = {k: max(1.0, v - own) for k, v in step.items()}
    if "hogwild_in_loop" in costs:
        costs["hogwild_in_loop"] = {k: max(1.0, v - own) for k, v in costs["hogwild_in_loop"].items()}
    for n, row in (costs.get("hogwild_at_cores") or {}).items():
        costs["hogwild_at_cores"][n] = {k: max(1.0, v * int(n) - own) / int(n) for k, v in row.items()}
    for name in ("vector_trip", "vector_round_trip", "vector_round_trip_learning"):
        for n, row in (costs.get(name) or {}).items():
            costs[name][n] = {k: max(1.0, v - own) for k, v in row.items()}


def loop_costs(bench: Bench, cores: int, wait_us: float, budget_s: float, log, own_wait: float = 0.0) -> dict:
    """The loops' costs, `passes` times and interleaved, each the median pass: on a shared machine
    a single pass caught seconds-long slow spells (an update 1.8x, hogwild's loop 2.5x dearer in
    one pass than in the next), and the median of three spread over a minute rejects one."""
    cfg = bench.cfg
    repeats, count = [], passes(budget_s)
    for _ in range(count):
        rep = vector_costs(cfg, cores, bench.policy, max(0.5, budget_s * 0.15 / count / len(vector_sizes(cores))),
                           wait_us)
        rep["in_loop"] = in_loop(cfg, budget_s * 0.3 / count)
        if wait_us > 0 and not own_wait:  # the same loop where the env waits: a process that idles pays more per update
            rep["in_loop_waiting"] = in_loop(cfg.replace(env_step_wait_us=wait_us), budget_s * 0.15 / count)
        rep["hogwild_in_loop"] = design_in_loop("hogwild", cfg, budget_s * 0.3 / count)
        repeats.append(rep)
    costs = median_repeat(repeats)
    # hogwild's loop is measured at this utd: the model uses it only there.
    costs["loops_utd"] = {"us": float(cfg.utd), "p10": float(cfg.utd), "p90": float(cfg.utd)}
    said = f"the median of {count} passes" if count > 1 else f"one pass: a budget under {ONE_PASS_BELOW_S:.0f} s"
    log(f"  in single_env's loop ({said}): " + ", ".join(f"{k} {v['us']:,.1f} us" for k, v in costs["in_loop"].items()))
    if "in_loop_waiting" in costs:
        log("  ... where the env waits: " + ", ".join(f"{k} {v['us']:,.1f} us" for k, v in
                                                   costs["in_loop_waiting"].items() if k != "env_step"))
    log(f"  an env step of hogwild's worker loop (one worker, steady state): {costs['hogwild_in_loop']['us']:,.1f} us")
    return costs


def role_costs(cfg: DQNConfig, cores: int, wait_us: float, budget_s: float, log, own_wait: float = 0.0) -> dict:
    """hogwild's loop at `cores` workers, actor_learner's roles time-sharing the cores and, where
    the env waits, its roles past the cores."""
    costs: dict = {}
    if cores > 1:
        at_cores = design_in_loop("hogwild", cfg, budget_s * 0.1, workers=cores)
        costs["hogwild_at_cores"] = {str(cores): at_cores}  # keyed by the count it ran at: the model scales from it
        log(f"  an env step of hogwild's loop with {cores} workers: {at_cores['us']:,.1f} us")
    costs["actor_learner_shared"] = shared_roles(cfg, cores, budget_s * 0.15)
    shared = costs["actor_learner_shared"]
    log(f"  actor_learner at {cores} actors ({cores + 1} processes on {cores} cores), CPU per env step: learner "
        f"{shared['learner']['us']:,.1f} us, actors {shared['actors']['us']:,.1f} us (wall {shared['wall']['us']:,.1f} us)")
    if wait_us > 0 or own_wait:  # past the cores, where the env waits: what each role really pays in CPU
        costs.update(waiting_roles(cfg.replace(env_step_wait_us=wait_us), waiting_counts(cores)))
        log("  actor_learner where the env waits, CPU per env step: " + ", ".join(
            f"{n} actors: actors {costs['actor_learner_waiting_actors'][n]['us']:,.1f} us, learner "
            f"{costs['actor_learner_waiting_learner'][n]['us']:,.1f} us" for n in waiting_counts(cores)))
    return costs


# ---------------------------------------------------------------------- the tracked experiment
def tracked_experiment():
    """The components as a Sacred experiment (`python -m experiments.components`), so a plan's inputs are stored as any run is."""
    from sacred import SETTINGS, Experiment

    from experiments.tracking.configs import NAMED_CONFIGS
    from experiments.tracking.host import HOST_INFO, store_source_diff
    from experiments.train import build_config

    SETTINGS.CAPTURE_MODE = "sys"
    ex = Experiment("components", save_git_info=False, additional_host_info=HOST_INFO)
    ex.add_config(dict(design="single_env", **DQNConfig().to_dict()))
    for name, values in NAMED_CONFIGS.items():
        ex.add_named_config(name, values)

    @ex.main
    def main(_config: dict, _run) -> dict:
        from architectures.core.limits import available_cores

        store_source_diff(_run)
        _, cfg = build_config(_config)
        cores = available_cores()
        return {"cores": cores, "costs_us": measure(cfg, cores=cores, log=lambda line: print(line, file=sys.stderr))}

    return ex
