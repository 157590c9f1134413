"""pqn: vectorised envs, Q(lambda) targets, no replay and no target network (Gallici et al. 2024).

PQN ("Simplifying Deep Temporal Difference Learning") learns each rollout once and drops it, with
LayerNorm keeping the network stable without a target network. The settings are CleanRL's
`pqn.py` (the named config `pqn`): RAdam at 2.5e-4 annealed linearly to 0, 4 envs x 128 steps a
rollout, 4 epochs of 4 minibatches, lambda 0.65, squared TD error, gradient norm 10, LayerNorm
MLP, epsilon 1 -> 0.05 over half the run. Same section order as single_env.py; what differs:
- acting: `num_workers` envs step in processes of their own (transport.vector_envs, as
  vector_env's), each through its `rollout_steps` steps in order while the others step; the ready
  ones are acted on in one batched forward pass, each env exploring on its own; the greedy value
  of every observation is kept for the targets. Which envs share a batch changes nothing: a fixed
  seed's rollouts, updates and holdouts are lockstep stepping's, bit for bit (only the env step a
  log line falls on moves);
- learning: once every env has its rollout, Q(lambda) returns are computed backwards over the
  rollout (`lambda_returns`), then `rollout_epochs` passes of `rollout_minibatches` shuffled
  minibatches fit Q(s, a) to them; the rollout is then dropped: no replay, no target network;
- a truncated episode (a time limit) bootstraps from its last observation's value, a terminated
  one from nothing; a rollout may overshoot a checkpoint by up to num_workers - 1 env steps
  (each env takes the same number of steps; the actual step is recorded);
- `learning_starts` holds back learning from the rollouts that end before it (0 in the `pqn` config);
- checkpoints fall at rollout boundaries, where nothing is in flight; on resume every env starts
  a fresh episode (as vector_env's), with the network, RAdam's state and every RNG as saved;
- with `device=cuda` the network and RAdam live on the GPU: each rollout crosses to it in one copy
  per field, the losses are summed there and read at the log, and the envs act on a host copy of
  the network refreshed after each rollout's learning (the network a rollout is acted with is
  fixed anyway: one publication per rollout changes nothing).

Run it without Sacred:  python -m architectures pqn --num_workers 4 --total_env_steps 50000
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from architectures.core.config import ConfigError, DQNConfig
from architectures.core.device import ActingWeights, check_device, host_float
from architectures.core.dqn import clip_grad_norm, td_loss
from architectures.core.envs import EnvSpec, env_spec, rng_seeds
from architectures.core.metrics import NullReporter, Reporter
from architectures.core.networks import GreedyPolicy, build_q_network
from architectures.core.schedules import EpsilonSchedule
from architectures.run.acting import EpisodeStats, EpisodeStream, HeldObs, worker_env_cost
from architectures.run.base import LearningLog, Restored, Run
from architectures.run.parts import EnvStreams
from architectures.transport.vector_envs import VectorEnvs, vector_envs
from architectures.transport.workers import warn_if_oversubscribed

TIMES = ("act", "env_wait", "targets", "update")


def lambda_returns(rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, next_values: np.ndarray,
                   gamma: float, lam: float) -> np.ndarray:
    """Q(lambda) targets (T, N), computed backwards over a rollout of T steps of N envs.

    rewards, terminated, truncated (T, N): what step t gave; next_values (T, N): max_a Q(s_t+1, a)
    under the acting network, s_t+1 being the observation step t led to (at a truncation, the
    episode's last observation, not the reset one). Within an episode G_t = r_t + gamma * [(1 -
    lam) V(s_t+1) + lam G_t+1]; at a termination G_t = r_t; at a truncation, and at the rollout's
    last step, G_t = r_t + gamma V(s_t+1) (tests/test_pqn.py::test_lambda_returns_match_their_definition)."""
    T = len(rewards)  # noqa: N806 - the rollout's length, as the paper writes it
    returns = np.empty_like(rewards)  # (T, N)
    for t in range(T - 1, -1, -1):
        bootstrap = next_values[t]
        if t < T - 1:  # the episode goes on into the rollout unless step t ended it
            bootstrap = np.where(truncated[t], bootstrap, (1.0 - lam) * bootstrap + lam * returns[t + 1])
        returns[t] = rewards[t] + gamma * np.where(terminated[t], 0.0, bootstrap)
    return returns


def make_optimizer(net: torch.nn.Module, cfg: DQNConfig) -> torch.optim.Optimizer:
    """RAdam, as CleanRL's pqn.py (its learning rate annealed by the loop when `lr_anneal`)."""
    return torch.optim.RAdam(net.parameters(), lr=cfg.lr)


def fit_rollout(net: torch.nn.Module, optimizer: torch.optim.Optimizer, shuffle: np.random.Generator,
                b_obs: torch.Tensor, b_actions: torch.Tensor, b_targets: torch.Tensor, cfg: DQNConfig,
                on_update) -> None:
    """`rollout_epochs` passes over one rollout's B = T x N samples, each in `rollout_minibatches`
    shuffled minibatches of about B / minibatches, fitting Q(s, a) to the Q(lambda) targets;
    `on_update(loss, q_taken, grad_norm)` after each update, the loss and the gradient's norm
    before clipping device scalars (the loop's counters, divergence check and curves). The
    components time it alone (experiments/components/alone.py `rollout_costs`), so the cost model
    prices PQN's learning with the code the runs execute. b_obs (B, *obs), b_actions and b_targets (B,)."""
    params = list(net.parameters())
    for _ in range(cfg.rollout_epochs):
        order = shuffle.permutation(len(b_actions))
        for chunk in np.array_split(order, cfg.rollout_minibatches):
            index = torch.as_tensor(chunk).to(b_actions.device)
            q_taken = net(b_obs[index]).gather(1, b_actions[index].unsqueeze(1)).squeeze(1)  # (b,)
            loss = td_loss(q_taken, b_targets[index], cfg.loss)
            optimizer.zero_grad(set_to_none=False)
            loss.backward()
            norm = clip_grad_norm(params, cfg.max_grad_norm)
            optimizer.step()
            on_update(loss.detach(), q_taken, norm)


def preflight(cfg: DQNConfig) -> None:
    if cfg.prioritized:  # there is no replay to prioritise: the setting would be silently ignored
        raise ConfigError("prioritized: pqn has no replay buffer; use single_env or actor_learner for prioritized "
                          "replay (got true)")


def train(cfg: DQNConfig, reporter: Reporter | None = None) -> dict:
    reporter = reporter or NullReporter()
    preflight(cfg)
    warn_if_oversubscribed(cfg.num_workers, "env processes plus the acting/learning process")
    torch.set_num_threads(cfg.learner_thread_count)
    spec = env_spec(cfg.env_id)
    with vector_envs("pqn", spec, cfg, [worker_env_cost(cfg, i) for i in range(cfg.num_workers)]) as envs:
        return _train(cfg, reporter, envs, spec)


class PQN:
    """One PQN run's state (see the module docstring): the network, RAdam, the acting copy and policy,
    the rollout's buffers, the env streams and the counters; `collect` acts one rollout, `learn` learns
    it once, `save`/`restore` are what a checkpoint holds."""

    def __init__(self, cfg: DQNConfig, reporter: Reporter, envs: VectorEnvs, spec: EnvSpec):
        n, T = cfg.num_workers, cfg.rollout_steps  # noqa: N806
        self.cfg, self.envs, self.spec, self.n, self.T = cfg, envs, spec, n, T
        self.device = torch.device(cfg.device)
        check_device(self.device)
        self.net = build_q_network(spec.obs_shape, spec.num_actions, cfg.hidden_sizes, cfg.layer_norm,
                                   cfg.seed).to(self.device)
        self.optimizer = make_optimizer(self.net, cfg)
        act_seed, batch_seed = rng_seeds(cfg.seed)
        self.acting = ActingWeights(self.net)  # the network itself on the CPU; a host copy of a CUDA one
        self.policy = GreedyPolicy(self.acting.net, np.random.default_rng(act_seed))  # acts through numpy views
        self.shuffle = np.random.default_rng(batch_seed)  # the minibatches' order
        self.streams = [EpisodeStream(cfg, i) for i in range(n)]  # seeds and episode totals per env
        self.epsilon = EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps)
        self.rollouts = math.ceil(cfg.total_env_steps / (n * T))  # the learning rate anneals over these
        self.obs_buf = np.zeros((T, n, *spec.obs_shape), dtype=spec.obs_dtype)  # (T, N, *obs)
        self.actions, self.rewards = np.zeros((T, n), dtype=np.int64), np.zeros((T, n), dtype=np.float32)
        self.terminated, self.truncated = np.zeros((T, n), dtype=bool), np.zeros((T, n), dtype=bool)
        self.next_values = np.zeros((T, n), dtype=np.float32)
        self.run = Run("pqn", cfg, reporter, self.acting.net)  # no ReplayLearning: the rollout is the data
        self.seconds, self.env_steps, self.done_rollouts, self.updates = dict.fromkeys(TIMES, 0.0), 0, 0, 0
        self.loss_sum, self.last_q, self.last_norm, self.last_return = 0.0, None, None, None
        self.device_losses = torch.zeros((), device=self.device)  # a device learner's losses since the last log
        self.held = None
        # the env streams, the policy's RNG, the env processes' counters and the seconds, saved as vector_env's are
        self.acting_streams = EnvStreams(self.streams, self.policy, envs, self.epsilon, self.seconds)
        self.run.attach("pqn", self)  # all of the above that a resume needs is this object's save()

    # ------------------------------------------------------------------ checkpoints (between rollouts)
    def save(self) -> dict:
        return {**self.acting_streams.save(), "net": self.net.state_dict(), "optimizer": self.optimizer.state_dict(),
                "shuffle_rng": self.shuffle.bit_generator.state, "rollouts": self.done_rollouts,
                "updates": self.updates, "env_steps": self.env_steps}

    def restore(self, saved: dict) -> Restored:
        """Every env starts a fresh episode with the seed its stream was on (EnvStreams, as vector_env's)."""
        restored = self.acting_streams.restore(saved)
        self.net.load_state_dict(saved["net"])  # in place: the policy's numpy views stay valid
        self.acting.publish(saved["updates"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.shuffle.bit_generator.state = saved["shuffle_rng"]
        self.env_steps, self.done_rollouts, self.updates = saved["env_steps"], saved["rollouts"], saved["updates"]
        return restored

    # ------------------------------------------------------------------ the learner's counters
    def on_update(self, loss: torch.Tensor, q_taken: torch.Tensor, norm: torch.Tensor) -> None:
        """After each update: the counters and the divergence check."""
        self.updates, self.last_q, self.last_norm = self.updates + 1, q_taken, norm
        if not self.acting.separate:  # on the CPU a read costs nothing: the run stops at the update that diverged
            value = float(loss)
            self.check_finite(value, self.updates - 1)
            self.loss_sum += value
        else:  # on a device: summed there, read and checked at the log
            self.device_losses.add_(loss)

    def check_finite(self, value: float, update: int) -> None:
        if not math.isfinite(value):
            q = self.last_q
            raise self.run.diverged(f"non-finite TD loss ({value})", update, self.env_steps,
                                    host_float(q.detach().abs().max()) if q is not None else float("nan"))

    def learned(self) -> LearningLog:
        """The losses since the last log, read from the device there."""
        if self.acting.separate:
            self.loss_sum = host_float(self.device_losses)
            self.device_losses.zero_()
            self.check_finite(self.loss_sum, self.updates)
        return LearningLog(self.updates, self.loss_sum, self.last_q, grad_norm=self.last_norm)

    def log(self) -> None:
        """The run's log, if due, with what a watcher of the rollouts wants."""
        if not self.run.log_due(self.env_steps):
            return
        figures = {"rollouts": self.done_rollouts, "learning_rate": self.optimizer.param_groups[0]["lr"],
                   **({"lambda_return_mean": self.last_return} if self.last_return is not None else {})}
        self.run.log(self.env_steps, sum((s.stats for s in self.streams), EpisodeStats()), self.learned(), **figures)
        self.loss_sum = 0.0

    # ------------------------------------------------------------------ acting: one rollout, each env in order
    def collect(self) -> tuple[int, int]:
        """Act one rollout; returns (its vector steps, the env steps it started at). Each env takes its
        `steps` steps in order while the others step; the ready ones are acted on together. Whichever envs
        are ready, env i's step t gets what lockstep gave it: epsilon at the rollout's position, the
        exploration draws (drawn step by step for every env, as lockstep drew them) and its row of one pass
        over every env's observation: no result depends on which envs share a batch (tests/test_pqn.py)."""
        n, policy, perf = self.n, self.policy, time.perf_counter
        steps, start = min(self.T, math.ceil((self.cfg.total_env_steps - self.env_steps) / n)), self.env_steps
        draws = [(policy.rng.random(n), policy.rng.integers(policy.num_actions, size=n)) for _ in range(steps)]
        step_of, idle, cut = np.zeros(n, dtype=np.int64), list(range(n)), {}  # each env's next step; time limits
        while self.env_steps < start + steps * n:
            t0 = perf()
            idle = self.send(idle, step_of, steps, start, draws)
            t1 = perf()
            ready = self.envs.recv()
            t2 = perf()
            self.receive(ready, step_of, cut)
            idle += ready
            self.seconds["act"] += t1 - t0 + perf() - t2
            self.seconds["env_wait"] += t2 - t1
            self.log()
        for t in sorted({t for t, _ in cut}):  # in one pass per step, the truncated envs in order, as lockstep
            ids = sorted(i for u, i in cut if u == t)
            self.next_values[t, ids] = policy.q_values_batch(np.stack([cut[t, i] for i in ids])).max(axis=1)
        return steps, start

    def send(self, idle: list[int], step_of: np.ndarray, steps: int, start: int, draws: list) -> list[int]:
        """Act on the idle envs that have steps left (one pass over every env's observation) and send them
        on; the envs still idle."""
        go = [i for i in idle if step_of[i] < steps]
        if not go:
            return idle
        q, held = self.policy.q_values_batch(self.held.obs), self.held  # (N, A): every env's row, ready or not
        for i, t in zip(go, step_of[go]):
            if t > 0 and not (self.terminated[t - 1, i] or self.truncated[t - 1, i]):  # the value of where t - 1 led
                self.next_values[t - 1, i] = q[i].max()
            explore, random_action = draws[t][0][i] < self.epsilon(start + t * self.n), draws[t][1][i]
            self.actions[t, i] = random_action if explore else q[i].argmax()
            self.obs_buf[t, i] = held.obs[i]
        self.envs.send(go, self.actions[step_of[go], go], [self.streams[i].upcoming_seed() for i in go])
        return [i for i in idle if step_of[i] >= steps]

    def receive(self, ready: list[int], step_of: np.ndarray, cut: dict) -> None:
        """The answered envs' steps into the rollout; a time limit's last observation kept for its bootstrap."""
        for i, t in zip(ready, step_of[ready]):
            acted_on, reward, next_obs, term, trunc = self.held.take(self.envs, i)
            self.rewards[t, i], self.terminated[t, i], self.truncated[t, i] = reward, term, trunc
            self.next_values[t, i] = 0.0
            if trunc:
                cut[t, i] = next_obs
            self.streams[i].record(acted_on, int(self.actions[t, i]), reward, next_obs, term, trunc, self.updates)
        step_of[ready] += 1
        self.env_steps += len(ready)

    # ------------------------------------------------------------------ learning: Q(lambda), epochs of minibatches
    def learn(self, steps: int) -> None:
        """The rollout's Q(lambda) targets, then its epochs of minibatches; the rollout is then dropped."""
        cfg, n, perf = self.cfg, self.n, time.perf_counter
        t3 = perf()
        last = self.policy.q_values_batch(self.held.obs).max(axis=1)  # where the rollout's last step led
        ended = self.terminated[steps - 1] | self.truncated[steps - 1]
        self.next_values[steps - 1] = np.where(ended, self.next_values[steps - 1], last)
        targets = lambda_returns(self.rewards[:steps], self.terminated[:steps], self.truncated[:steps],
                                 self.next_values[:steps], cfg.gamma, cfg.q_lambda)
        self.last_return = float(targets.mean())  # the rollout's mean Q(lambda) target, for the curves
        b_obs = torch.as_tensor(self.obs_buf[:steps].reshape(steps * n, *self.spec.obs_shape)).to(self.device)
        b_actions = torch.as_tensor(self.actions[:steps].reshape(-1)).to(self.device)  # (B,)
        b_targets = torch.as_tensor(targets.reshape(-1)).to(self.device)  # (B,)
        t4 = perf()
        if cfg.lr_anneal:  # linearly to 0 over the run's rollouts, as CleanRL anneals it
            self.optimizer.param_groups[0]["lr"] = cfg.lr * (1.0 - self.done_rollouts / self.rollouts)
        if self.env_steps >= cfg.learning_starts:
            fit_rollout(self.net, self.optimizer, self.shuffle, b_obs, b_actions, b_targets, cfg, self.on_update)
            self.acting.publish(self.updates)  # a CUDA network's host copy: one copy per rollout
        self.done_rollouts += 1
        self.seconds["targets"] += t4 - t3
        self.seconds["update"] += perf() - t4


def _train(cfg: DQNConfig, reporter: Reporter, envs: VectorEnvs, spec: EnvSpec) -> dict:
    # ------------------------------------------------------------------ setup
    pqn = PQN(cfg, reporter, envs, spec)
    run = pqn.run
    run.resume()  # the PQN part (its streams, network, optimizer, RNGs, counters), if a checkpoint exists
    pqn.held = HeldObs(envs.reset(range(pqn.n), [s.episode_seed for s in pqn.streams]))  # each env's observation now
    run.start_clock(workers=lambda: envs.pids)
    while pqn.env_steps < cfg.total_env_steps:
        # ------------------------------------------------------------------ acting: one rollout
        steps, start = pqn.collect()
        # ------------------------------------------------------------------ evaluation (off the clock)
        for t in range(steps):  # every holdout the rollout passed, at the vector step it fell on
            run.maybe_evaluate(start + (t + 1) * pqn.n)
        # ------------------------------------------------------------------ learning
        pqn.learn(steps)
        # ------------------------------------------------------------------ syncing
        # Nothing to do: the policy acts through numpy views of the network's own weights (a CUDA
        # network's host copy was refreshed after the learning above).
        # ------------------------------------------------------------------ checkpointing (between rollouts)
        if run.save_due(pqn.env_steps):
            run.save(pqn.env_steps)
    run.end_clock()  # closing the envs is not training
    trip, answered, seconds = envs.seconds, max(1, envs.answered), pqn.seconds
    return run.result(
        env_steps=pqn.env_steps, episodes=sum((s.stats for s in pqn.streams), EpisodeStats()), updates=pqn.updates,
        num_workers=pqn.n, rollouts=pqn.done_rollouts, components={
            "act": (seconds["act"], pqn.env_steps), "env_wait": (seconds["env_wait"], pqn.env_steps),
            "targets": (seconds["targets"], pqn.done_rollouts), "update": (seconds["update"], pqn.updates)},
        round_trip_us={part: 1e6 * trip[part] / answered for part in ("to_env", "env_step", "to_main")})
