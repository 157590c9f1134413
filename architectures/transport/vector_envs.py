"""Vectorised envs that answer as each is ready: one process per env, shared memory, no pickling.

vector_env and pqn act for N envs from one process. gymnasium's AsyncVectorEnv, which they used
up to dc629ec, steps them in lockstep: every vector step pickles an action to each env and a reply
back, waits for the slowest env, and resets ended episodes in a second round trip. Here, as
EnvPool's async mode: `send(ids, actions, seeds)` steps exactly those envs and `recv()` blocks,
using no CPU, until at least one env has answered, then returns every env that has, so the caller
acts on the ready envs while the others step. Actions, observations, rewards and flags travel
through the run's shared blocks; an env whose step ends its episode resets at once with the seed
sent beside its action (no second round trip). Each env process is a WorkerPool worker (spawned,
watched, stopped, its blocks and semaphores unlinked even after a kill: workers.py, reaper.py).

The hand-off is counted semaphores both ways, one post per command and one per answer, so a slot
is read only after its writer's post, on any CPU: the main process writes an env's command and
posts its `commands`; the env steps, writes its answer, posts its `answers` and notifies the main
process if it sleeps (notifier.Notifier.post). An env waiting for a command beats; every wait
of the main process gives up after worker_timeout_s naming the env, and a dead env is named at once.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from architectures.core.envs import EnvSpec, make_env
from architectures.transport.notifier import Waiter
from architectures.transport.workers import WorkerFailed, worker_pool

STEP, RESET = 1, 2  # an env's command
HEALTH_S = 0.1
"""How often a busy main process checks its envs (a blocked one checks on every beat)."""
GRACE_S = 0.5
"""How long envs asked to stop may take before they are terminated (a hung one never would)."""


@dataclass
class EnvArgs:
    """What env process `index` is given beside the shared blocks (workers.run_worker)."""

    env_id: str
    cost_us: float
    wait_us: float
    max_episode_steps: int  # 0: the env's own cap
    commands: Any  # posted by the main process once per command
    answers: Any  # posted by the env once per answer


def _serve(index: int, arrays: dict, waiter: Waiter, args: EnvArgs) -> None:
    """An env process: take a command, step (and reset at an episode end) or reset, answer. Unlike
    actor_learner's actors it keeps the main process's priority (actor_nice): the main process waits
    for its answer and it for the main process's command, so its wake-up is on every step's path
    (niced under load, envs were slow to start a command: docs/design-notes.md#vector_envs)."""
    env = make_env(args.env_id, args.cost_us, args.wait_us, args.max_episode_steps)
    status = arrays["status"][index]
    kind, action, seed = arrays["env_kind"], arrays["env_action"], arrays["env_seed"]
    next_obs, reset_obs, reward = arrays["env_next_obs"], arrays["env_reset_obs"], arrays["env_reward"]
    terminated, truncated, began, ended = (arrays["env_terminated"], arrays["env_truncated"], arrays["env_began"],
                                           arrays["env_ended"])
    answered = arrays["env_answered"]
    perf, step_s, wait_s = time.perf_counter, 0.0, 0.0
    try:
        waiter.ready()
        while True:
            wait_s += waiter.take(args.commands)
            t0 = perf()
            if kind[index] == RESET:
                reset_obs[index] = env.reset(seed=int(seed[index]))[0]
            else:
                obs, r, term, trunc, _ = env.step(int(action[index]))
                next_obs[index], reward[index], terminated[index], truncated[index] = obs, r, term, trunc
                if term or trunc:  # the next episode at once, with the seed sent for it
                    reset_obs[index] = env.reset(seed=int(seed[index]))[0]
                status["env_steps"] += 1
            t1 = perf()
            began[index], ended[index] = t0, t1
            step_s += t1 - t0
            status["t_env_step"], status["t_wait"] = step_s, wait_s
            args.answers.release()
            answered[index] += 1  # after the post: a hint of whom to take, so a poll skips the others
            waiter.main_notifier.post(0)
    finally:
        env.close()


class VectorEnvs:
    """N env processes stepped by `send` and answered by `recv` (see the module docstring).

    After `recv`, env i's answer is `next_obs[i]`, `reward[i]`, `terminated[i]`, `truncated[i]`, and
    `reset_obs[i]` where its episode ended (or it was reset): views of shared memory, rewritten by
    the env's next command, so a caller copies what it keeps. `seconds` sums, over every answer,
    the command's way to the env (`to_env`), the env's step (`env_step`), the answer's wait until
    the main process took it (`to_main`), and the main process's own send, receive and blocked
    wait: the round trip's parts."""

    def __init__(self, pool, design: str, spec: EnvSpec, env_id: str, costs: list[float], wait_us: float,
                 timeout_s: float, max_episode_steps: int = 0):
        n, blocks = len(costs), pool.blocks
        self.pool, self.design, self.env_id, self.timeout_s, self.num_envs = pool, design, env_id, timeout_s, n
        self.kind = blocks.allocate("env_kind", (n,), np.int64)
        self.action = blocks.allocate("env_action", (n,), np.int64)
        self.seed = blocks.allocate("env_seed", (n,), np.int64)
        self.next_obs = blocks.allocate("env_next_obs", (n, *spec.obs_shape), spec.obs_dtype)
        self.reset_obs = blocks.allocate("env_reset_obs", (n, *spec.obs_shape), spec.obs_dtype)
        self.reward = blocks.allocate("env_reward", (n,), np.float64)
        self.terminated = blocks.allocate("env_terminated", (n,), np.bool_)
        self.truncated = blocks.allocate("env_truncated", (n,), np.bool_)
        self.began, self.ended = blocks.allocate("env_began", (n,), np.float64), blocks.allocate("env_ended", (n,),
                                                                                                  np.float64)
        self.answered_hint = blocks.allocate("env_answered", (n,), np.int64)  # each env's answers, counted by it
        self.taken = [0] * n  # ... and by this process
        self.commands = [pool.ctx.Semaphore(0) for _ in range(n)]
        self.answers = [pool.ctx.Semaphore(0) for _ in range(n)]
        self.sent_at = [0.0] * n  # when each env's command in flight was posted
        self.flying: list[int] = []  # envs with a command in flight, in the order sent
        self.seconds = dict.fromkeys(("send", "to_env", "env_step", "to_main", "recv", "blocked"), 0.0)
        self.answered = 0
        self.steps_before = np.zeros(n, dtype=np.int64)  # each env's steps before this process (a resume)
        self._last_check = 0.0
        pool.start(_serve, lambda i: EnvArgs(env_id, costs[i], wait_us, max_episode_steps, self.commands[i],
                                             self.answers[i]))
        pool.go(max(120.0, timeout_s))

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.pool.procs]

    # ------------------------------------------------------------------ commands
    def send(self, ids, actions, seeds) -> None:
        """Step envs `ids` with `actions`; an episode that ends is reset with its entry of `seeds`."""
        began = time.perf_counter()
        for i, a, s in zip(ids, actions, seeds):
            self.kind[i], self.action[i], self.seed[i] = STEP, a, s
            self._post(i, began)
        self.seconds["send"] += time.perf_counter() - began

    def reset(self, ids, seeds) -> np.ndarray:
        """Reset envs `ids` with `seeds` and wait for all of them: their first observations (a copy)."""
        now = time.perf_counter()
        for i, s in zip(ids, seeds):
            self.kind[i], self.seed[i] = RESET, s
            self._post(i, now)
        pending = set(ids)
        while pending:
            pending -= set(self.recv())
        return self.reset_obs[list(ids)].copy()

    def _post(self, i: int, now: float) -> None:
        self.sent_at[i] = now
        self.flying.append(i)
        self.commands[i].release()

    # ------------------------------------------------------------------ answers
    def ready(self) -> list[int]:
        """The envs in flight that have answered, taken now (no wait). An env counts its answer
        after posting it: a count ahead of ours names an env whose post can be taken; the post,
        not the count, is what makes its answer visible here (a count seen before its post, on a
        CPU that reorders stores, is taken at the next poll)."""
        hint, taken = self.answered_hint, self.taken
        got = [i for i in self.flying if hint[i] != taken[i] and self.answers[i].acquire(False)]
        if got:
            self._took(got)
        return got

    def recv(self) -> list[int]:
        """Block (no CPU) until at least one env in flight has answered; the envs that have."""
        if not self.flying:
            raise RuntimeError("recv: no env has a command in flight")
        began = time.perf_counter()
        got = self.ready()
        if not got:
            def answered() -> bool:
                got.extend(self.ready())
                return bool(got)

            self.pool.main_notifier.wait_until(0, answered, self.maybe_check)
            self.seconds["blocked"] += time.perf_counter() - began
        self.maybe_check()
        self.seconds["recv"] += time.perf_counter() - began
        return got

    def _took(self, got: list[int]) -> None:
        now, seconds = time.perf_counter(), self.seconds
        for i in got:
            self.flying.remove(i)
            self.taken[i] += 1
            began, ended = float(self.began[i]), float(self.ended[i])
            seconds["to_env"] += began - self.sent_at[i]
            seconds["env_step"] += ended - began
            seconds["to_main"] += now - ended
        self.answered += len(got)

    # ------------------------------------------------------------------ supervision
    def maybe_check(self) -> None:
        """`check`, at most every HEALTH_S: a busy main process still notices a hung or dead env."""
        if time.monotonic() - self._last_check > HEALTH_S:
            self.check()

    def check(self) -> None:
        """Fail the run in one line naming an env that died, or did not answer within the timeout."""
        self._last_check = time.monotonic()
        now = time.perf_counter()
        late = [i for i in self.flying if now - self.sent_at[i] > self.timeout_s]
        if late:
            i = late[0]
            what = "reset" if self.kind[i] == RESET else "step"
            raise WorkerFailed(f"{self.design}: env {i} (pid {self.pool.procs[i].pid}) of {self.env_id!r} did not "
                               f"answer its {what} within {self.timeout_s:g} s: hung (worker_timeout_s), after "
                               f"{self.env_steps(i):,} of its env steps ({self.env_steps():,} of the run)")
        try:
            self.pool.check(hung=False)
        except WorkerFailed as err:
            raise WorkerFailed(f"{self.design}: {err} ({self.env_id!r})") from None

    def env_steps(self, index: int | None = None) -> int:
        """Env steps taken by env `index` (or by all), as the env counts them."""
        steps = self.pool.status["env_steps"] + self.steps_before
        return int(steps.sum() if index is None else steps[index])

    def env_seconds(self) -> dict[str, float]:
        """The env processes' own time, summed over them: stepping (resets included) and waiting."""
        status = self.pool.status
        return {"env_step": float(status["t_env_step"].sum()), "wait": float(status["t_wait"].sum())}

    def counters(self) -> dict:
        """What a checkpoint keeps of the round trip's timers."""
        return {"seconds": dict(self.seconds), "answered": self.answered}

    def resume_counters(self, counters: dict, steps: list[int]) -> None:
        """The timers as saved, and each env's steps before this process (`steps`)."""
        self.seconds.update(counters["seconds"])
        self.answered = counters["answered"]
        self.steps_before[:] = steps

    def close(self) -> None:
        """Stop every env process (a hung one is terminated after GRACE_S)."""
        self.pool.stop(grace_s=GRACE_S)


@contextmanager
def vector_envs(design: str, spec: EnvSpec, cfg, costs: list[float]) -> Iterator[VectorEnvs]:
    """`cfg.num_workers` env processes for `design` (`costs`: each env's busy us per step), stopped
    and their shared memory freed however the run ends."""
    with worker_pool("env", len(costs), cfg.worker_timeout_s) as pool:
        envs = VectorEnvs(pool, design, spec, cfg.env_id, costs, cfg.env_step_wait_us, cfg.worker_timeout_s,
                          cfg.max_episode_steps)
        try:
            yield envs
        finally:
            envs.close()

