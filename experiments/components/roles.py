"""What the multi-process designs' loops and roles pay, run as themselves (experiments/components/measure.py
measures them with the rest): hogwild's worker loop at one worker and at the cores, and
actor_learner's roles time-sharing the cores and where the env waits, past the cores."""

from __future__ import annotations

from architectures.core.config import DQNConfig
from experiments.components.alone import spread


def design_in_loop(design: str, cfg: DQNConfig, seconds: float, workers: int = 1) -> dict:
    """One env step of `design` with `workers` workers (us per env step of all of them), as its own
    loop pays it in steady state: two runs of S and 2 S env steps (learning from the start, no
    evaluation), and the second S's share of the time, so start-up and the first, slow updates
    cancel out. The model calibrates hogwild's formula on it at one worker (`hogwild_in_loop`) and
    at `workers` = cores (`hogwild_at_cores`): its loop's bookkeeping and its workers' shared
    writes cost more than the components say (docs/plan-and-cost-model.md, "How the model got its terms")."""
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
    cores bound them, at the CPU they really paid (CartPole waiting 2.2 ms, seed 1; the
    shape_check sweep missed actor_learner at 16 and 24 actors by -25% and -35% without this term)."""
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
        actors[n] = spread([cpu["workers_us_per_env_step"]])  # one run: us = p10 = p90
        learner[n] = spread([cpu["main_us_per_env_step"]])
    return {"actor_learner_waiting_actors": actors, "actor_learner_waiting_learner": learner}
