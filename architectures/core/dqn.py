"""The one DQN update (the learner), its optimizer, and the schedules that pace it.

`DQNLearner.update(batch)` is the only place gradients are computed in the suite:
    loss = L( Q(s, a),  r + discount * Q_target(s', argmax_a' Q(s', a')) )   (double DQN)
with L the Huber (delta 1) or squared error, the global gradient norm clipped, Adam, and the
target network synced every `target_update_period` updates (hard copy or Polyak).
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from architectures.core.config import DQNConfig
from architectures.core.device import check_device
from architectures.core.envs import EnvSpec
from architectures.core.networks import build_q_network


class FusedAdam:
    """Adam through the same fused kernel `torch.optim.Adam(fused=True)` calls.

    Why not torch.optim: constructing any torch.optim optimizer imports torch._dynamo (seconds of
    start-up) and its step wrapper adds a cost to every update (docs/design-notes.md#fusedadam).
    The maths is not reimplemented: `tests/test_dqn.py` checks this matches torch.optim.Adam
    bit for bit. State is created eagerly, at construction, so it exists before any worker
    could share it (lazily created optimizer state is silently unshared).
    """

    def __init__(self, params: list[nn.Parameter], lr: float, eps: float = 1e-8,
                 betas: tuple[float, float] = (0.9, 0.999)):
        self.params = list(params)
        self.lr, self.eps, self.betas = lr, eps, betas
        self.exp_avgs = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sqs = [torch.zeros_like(p) for p in self.params]
        # Each step count on its parameter's device: CUDA's fused kernel reads it there (a count on
        # the CPU failed every CUDA update: "state_steps is on cpu"; tests/test_device.py).
        self.steps = [torch.zeros((), dtype=torch.float32, device=p.device) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        grads = [p.grad for p in self.params]
        torch._foreach_add_(self.steps, 1)
        torch._fused_adam_(self.params, grads, self.exp_avgs, self.exp_avg_sqs, [], self.steps,
                           lr=self.lr, beta1=self.betas[0], beta2=self.betas[1], weight_decay=0.0,
                           eps=self.eps, amsgrad=False, maximize=False)

    def state_dict(self) -> dict:
        return {"exp_avgs": [t.clone() for t in self.exp_avgs],
                "exp_avg_sqs": [t.clone() for t in self.exp_avg_sqs],
                "steps": [t.clone() for t in self.steps]}

    def load_state_dict(self, state: dict) -> None:
        for key in ("exp_avgs", "exp_avg_sqs", "steps"):
            for dst, src in zip(getattr(self, key), state[key]):
                dst.copy_(src)


@torch.no_grad()
def clip_grad_norm(params: list[nn.Parameter], max_norm: float) -> torch.Tensor:
    """Scale gradients so their global L2 norm is at most max_norm; returns the norm before.

    The same arithmetic as torch.nn.utils.clip_grad_norm_ (tested), without its per-call checks.
    """
    grads = [p.grad for p in params]
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    if total.device.type == "cpu" and float(total) + 2e-6 < 0.999 * max_norm:  # the scale is exactly 1 and
        return total  # x * 1 is x: its four ops skipped (a free read on the CPU; a device keeps them, unread)
    torch._foreach_mul_(grads, torch.clamp(max_norm / (total + 1e-6), max=1.0))
    return total


def td_loss(q_taken: torch.Tensor, td_target: torch.Tensor, kind: str,
            weights: torch.Tensor | None = None) -> torch.Tensor:
    """Mean Huber (delta 1) or squared TD error; `weights` (B,) are prioritized replay's
    importance weights (None = uniform, the exact unweighted mean)."""
    if weights is None:
        return F.smooth_l1_loss(q_taken, td_target) if kind == "huber" else F.mse_loss(q_taken, td_target)
    per_sample = (F.smooth_l1_loss(q_taken, td_target, reduction="none") if kind == "huber"
                  else F.mse_loss(q_taken, td_target, reduction="none"))
    return (per_sample * weights).mean()


class MLPGradient:
    """The TD loss's gradient for a Linear-ReLU MLP, by its hand-derived backward pass.

    Why: for CartPole-sized MLPs autograd's bookkeeping costs more than the arithmetic; this
    path does the same matmuls with ~half the ops and no graph, and made the whole update faster
    in the training loop (docs/design-notes.md#mlp_fast_grad). It is used only for MLPs without
    LayerNorm on CPU (`mlp_fast_grad`, on by default); `tests/test_dqn.py` checks loss and
    gradients against autograd for every loss, depth and double/plain DQN.
    """

    @staticmethod
    def supports(net: nn.Module) -> bool:
        head = getattr(net, "head", None)
        return (not getattr(net, "is_image", True) and head is not None
                and all(isinstance(m, (nn.Linear, nn.ReLU)) for m in head))

    def __init__(self, net: nn.Module, loss: str):
        self.layers = [(m.weight, m.bias) for m in net.head if isinstance(m, nn.Linear)]
        self.grads = [(torch.zeros_like(w), torch.zeros_like(b)) for w, b in self.layers]
        self.loss = loss

    @torch.no_grad()
    def __call__(self, obs: torch.Tensor, action: torch.Tensor, td_target: torch.Tensor,
                 weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        x = obs.float().flatten(1)                                                    # (B, D)
        inputs = []  # each layer's input: obs, then post-ReLU activations
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            inputs.append(x)
            x = torch.addmm(b, x, w.t())                                              # (B, out_i)
            if i < last:
                x = torch.relu_(x)
        q_taken = x.gather(1, action).squeeze(1)                                      # (B,)
        loss = td_loss(q_taken, td_target, self.loss, weights)
        err = q_taken - td_target                                                     # (B,)
        # dLoss/dQ(s,a): mean over the batch of Huber's clipped error, or of 2 x error (MSE).
        d_taken = err.clamp_(-1.0, 1.0) if self.loss == "huber" else err.mul_(2.0)
        if weights is not None:
            d_taken.mul_(weights)                                                     # importance weights
        grad = torch.zeros_like(x).scatter_(1, action, d_taken.div_(len(err)).unsqueeze(1))  # (B, A)
        for i in range(last, -1, -1):
            w, b = self.layers[i]
            grad_w, grad_b = self.grads[i]
            torch.mm(grad.t(), inputs[i], out=grad_w)                                 # (out_i, in_i)
            torch.sum(grad, 0, out=grad_b)                                            # (out_i,)
            w.grad, b.grad = grad_w, grad_b
            if i > 0:
                # Back through the ReLU: inputs[i] = relu(pre), and pre > 0 exactly where it is > 0.
                grad = torch.ops.aten.threshold_backward(grad.mm(w), inputs[i], 0.0)  # (B, in_i)
        return loss, q_taken


class DQNLearner:
    """Owns the online and target networks and the optimizer; `version` counts updates."""

    def __init__(self, online: nn.Module, cfg: DQNConfig, target: nn.Module | None = None,
                 optimizer_state: dict | None = None, device: torch.device | str | None = None):
        """`target` and `optimizer_state` (FusedAdam's exp_avgs, exp_avg_sqs, steps) let several
        processes share one target network and one Adam state (hogwild); by default each is new.
        `device` overrides cfg.device (the tests' `meta` stand-in for an accelerator)."""
        self.cfg = cfg
        self.device = torch.device(cfg.device) if device is None else torch.device(device)
        check_device(self.device)
        self.online = online.to(self.device)
        self.target = copy.deepcopy(online).requires_grad_(False) if target is None else target
        self.optimizer = FusedAdam(list(self.online.parameters()), lr=cfg.lr, eps=cfg.adam_eps)
        if optimizer_state is not None:  # use the given tensors themselves, not copies
            for key in ("exp_avgs", "exp_avg_sqs", "steps"):
                setattr(self.optimizer, key, list(optimizer_state[key]))
        self._online_params = list(self.online.parameters())
        self._target_params = list(self.target.parameters())
        self.version = 0  # learner updates done = parameter version
        self.last_q_taken: torch.Tensor | None = None
        self.last_td_abs: torch.Tensor | None = None  # |TD error| of the last weighted batch
        self.last_grad_norm: torch.Tensor | None = None  # global gradient norm before clipping
        self.resets = 0
        on_cpu = self.device.type == "cpu"
        self._mlp_gradient = MLPGradient(self.online, cfg.loss) if (
            cfg.mlp_fast_grad and on_cpu and MLPGradient.supports(self.online)) else None

    def _put(self, a: np.ndarray | torch.Tensor) -> torch.Tensor:
        """A batch field on the learner's device: a host array is copied there (a device replay's
        fields are there already)."""
        if isinstance(a, torch.Tensor):
            return a
        t = torch.from_numpy(a)
        return t if self.device.type == "cpu" else t.to(self.device, non_blocking=True)

    def update(self, batch: dict[str, np.ndarray]) -> float:
        """One gradient step on a replay batch; returns the TD loss (read on the host: a
        synchronisation per update on CUDA, where core/device_step.py reads it per log instead).

        `last_q_taken` keeps this batch's Q(s, a) as a tensor: reading its mean costs a sync, so
        callers read it at their logging cadence instead of after every update."""
        loss = self.compute_gradient(batch)
        self.apply_gradient()
        return loss

    def compute_gradient(self, batch: dict[str, np.ndarray]) -> float:
        """Set every parameter's .grad for the TD loss on `batch`; returns the loss on the host."""
        return float(self.gradient(batch))

    def gradient(self, batch: dict[str, np.ndarray | torch.Tensor]) -> torch.Tensor:
        """Set every parameter's .grad for the TD loss on `batch` (reads the parameters only);
        returns the loss as a device scalar, with no host read."""
        cfg, put = self.cfg, self._put
        obs = put(batch["obs"])                                                       # (B, *obs)
        next_obs = put(batch["next_obs"])                                             # (B, *obs)
        action = put(batch["action"]).unsqueeze(1)                                    # (B, 1)
        reward = put(batch["reward"])                                                 # (B,)
        discount = put(batch["discount"])                                             # (B,)

        with torch.no_grad():
            next_q_target = self.target(next_obs)                                     # (B, A)
            if cfg.double_dqn:
                next_action = self.online(next_obs).argmax(dim=1, keepdim=True)       # (B, 1)
                bootstrap = next_q_target.gather(1, next_action).squeeze(1)           # (B,)
            else:
                bootstrap = next_q_target.max(dim=1).values                           # (B,)
            td_target = torch.addcmul(reward, discount, bootstrap)                    # (B,) r + discount * boot

        weights = batch.get("weights")  # prioritized replay's importance weights, (B,)
        weights = None if weights is None else put(weights)
        if self._mlp_gradient is not None:
            loss, q_taken = self._mlp_gradient(obs, action, td_target, weights)       # sets p.grad
        else:
            q_taken = self.online(obs).gather(1, action).squeeze(1)                   # (B,)
            loss = td_loss(q_taken, td_target, cfg.loss, weights)
            self.optimizer.zero_grad()
            loss.backward()
        if cfg.max_grad_norm > 0:
            self.last_grad_norm = clip_grad_norm(self._online_params, cfg.max_grad_norm)  # before clipping
        self.last_q_taken = q_taken.detach()  # (B,)
        if weights is not None:  # new priorities for the sampled rows
            self.last_td_abs = (self.last_q_taken - td_target).abs_()                 # (B,)
        return loss.detach()

    def apply_gradient(self, sync_target: bool = True) -> None:
        """Adam step with the gradient `compute_gradient` left (the only parameter write); the
        target syncs every target_update_period versions unless the caller schedules it."""
        self.step_optimizer()
        self.advance(sync_target)

    def step_optimizer(self) -> None:
        """The device's part of applying a gradient: Adam's step (a CUDA graph captures it)."""
        self.optimizer.step()

    def advance(self, sync_target: bool = True) -> None:
        """The host's part: count the update, and sync the target on its period."""
        self.version += 1
        if sync_target and self.version % self.cfg.target_update_period == 0:
            self.sync_target()

    @torch.no_grad()
    def sync_target(self) -> None:
        if self.cfg.target_tau >= 1.0:
            torch._foreach_copy_(self._target_params, self._online_params)
        else:
            torch._foreach_lerp_(self._target_params, self._online_params, self.cfg.target_tau)

    @torch.no_grad()
    def reset_parameters(self, layers: str, seed: int) -> None:
        """Re-initialise the output layer (`last`) or every layer (`all`) of the online and target
        networks to a fresh draw, and zero those parameters' Adam moments (primacy-bias resets).
        The draw is seeded, so a run with resets is reproducible."""
        fresh = list(_fresh_like(self.online, seed).parameters())
        online, target = list(self.online.parameters()), list(self.target.parameters())
        chosen = range(len(online)) if layers == "all" else range(len(online) - 2, len(online))  # last weight, bias
        for i in chosen:
            online[i].copy_(fresh[i])
            target[i].copy_(fresh[i])
            self.optimizer.exp_avgs[i].zero_()
            self.optimizer.exp_avg_sqs[i].zero_()
        self.resets += 1

    def state_dict(self) -> dict:
        """Everything a resumed learner needs to continue exactly: both networks, Adam's moments
        and step counts, the update count, the reset count (it seeds the next reset's draw) and
        the latest batch's Q(s, a) (logged at the next log)."""
        return {"online": self.online.state_dict(), "target": self.target.state_dict(),
                "optimizer": self.optimizer.state_dict(), "version": self.version, "resets": self.resets,
                "last_q_taken": self.last_q_taken}

    def load_state_dict(self, state: dict) -> None:
        # load_state_dict copies in place, so numpy views held by policies stay valid.
        self.online.load_state_dict(state["online"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.version, self.resets, self.last_q_taken = state["version"], state["resets"], state["last_q_taken"]


def build_learner(spec: EnvSpec, cfg: DQNConfig) -> "DQNLearner":
    """The run's learner: a Q-network for `spec`'s observations and actions with the config's
    hidden sizes and LayerNorm, initialised from its seed, and the DQN update around it."""
    return DQNLearner(build_q_network(spec.obs_shape, spec.num_actions, cfg.hidden_sizes, cfg.layer_norm, cfg.seed),
                      cfg)


def _fresh_like(net: nn.Module, seed: int) -> nn.Module:
    """A newly initialised copy of `net`'s architecture, drawn from torch's RNG seeded `seed`."""
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    fresh = copy.deepcopy(net)
    for module in fresh.modules():
        if hasattr(module, "reset_parameters") and module is not fresh:
            module.reset_parameters()
    torch.random.set_rng_state(state)
    return fresh
