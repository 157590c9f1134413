"""The one Q-network (what is learned), and the greedy policy that acts with it.

- `QNetwork`: an MLP for vector observations, the MinAtar conv net (Young & Tian 2019) for
  (H, W, C) image observations; optional LayerNorm before each hidden ReLU.
- `GreedyPolicy`: epsilon-greedy acting for one observation. For MLPs it runs the forward pass
  in numpy over *views* of the torch weights: for one observation far cheaper than torch's calls
  (docs/design-notes.md#networks), and it sees every in-place optimizer step (or a weight copy
  into the same storage) with no sync call.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

LAYER_NORM_EPS = 1e-5
_LINEAR, _RELU, _LAYER_NORM = "linear", "relu", "layer_norm"


def _dense_stack(in_dim: int, hidden: Sequence[int], layer_norm: bool) -> list[nn.Module]:
    layers: list[nn.Module] = []
    for width in hidden:
        layers.append(nn.Linear(in_dim, width))
        if layer_norm:
            layers.append(nn.LayerNorm(width, eps=LAYER_NORM_EPS))
        layers.append(nn.ReLU())
        in_dim = width
    return layers


class QNetwork(nn.Module):
    """obs (B, *obs_shape) -> Q-values (B, num_actions)."""

    def __init__(self, obs_shape: Sequence[int], num_actions: int, hidden_sizes: Sequence[int],
                 layer_norm: bool = False):
        super().__init__()
        self.obs_shape = tuple(obs_shape)
        self.num_actions = num_actions
        self.hidden_sizes, self.layer_norm = tuple(hidden_sizes), bool(layer_norm)  # enough to rebuild it
        self.is_image = len(self.obs_shape) == 3
        if self.is_image:
            # MinAtar (Young & Tian 2019): one 3x3 conv with 16 channels, one dense layer.
            h, w, c = self.obs_shape
            self.torso: nn.Module = nn.Sequential(nn.Conv2d(c, 16, kernel_size=3, stride=1), nn.ReLU(), nn.Flatten())
            flat = 16 * (h - 2) * (w - 2)
        else:
            self.torso = nn.Flatten()
            flat = int(np.prod(self.obs_shape))
        self.head = nn.Sequential(*_dense_stack(flat, hidden_sizes, layer_norm), nn.Linear(
            hidden_sizes[-1], num_actions))

        # The head's layers called functionally: nn.Sequential's per-module dispatch is a visible
        # share of a whole update for a CartPole-sized MLP (docs/design-notes.md#networks).
        self._plan = [(type(m), m) for m in self.head]

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs.float()  # (B, *obs_shape); a no-op for float32 observations
        if self.is_image:
            x = self.torso(x.permute(0, 3, 1, 2))  # (B, H, W, C) -> (B, C, H, W) -> (B, 16*(H-2)*(W-2))
        else:
            x = x.flatten(1)  # (B, D)
        for kind, m in self._plan:
            if kind is nn.Linear:
                x = F.linear(x, m.weight, m.bias)
            elif kind is nn.ReLU:
                x = torch.relu(x)
            else:
                x = F.layer_norm(x, m.normalized_shape, m.weight, m.bias, m.eps)
        return x  # (B, A)


def build_q_network(obs_shape: Sequence[int], num_actions: int, hidden_sizes: Sequence[int],
                    layer_norm: bool, seed: int) -> QNetwork:
    """Deterministic init: the same seed gives the same weights, whatever else used torch's RNG."""
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    net = QNetwork(obs_shape, num_actions, hidden_sizes, layer_norm)
    torch.random.set_rng_state(generator_state)
    return net


def host_copy(net: QNetwork) -> QNetwork:
    """A CPU copy of `net` sharing no memory with it (not hogwild's shared memory, not a device
    learner's pinned host buffer), so it outlives the run that trained it."""
    copy = QNetwork(net.obs_shape, net.num_actions, net.hidden_sizes, net.layer_norm)
    copy.load_state_dict({k: v.detach().to("cpu", copy=True) for k, v in net.state_dict().items()})
    return copy


class GreedyPolicy:
    """Epsilon-greedy action for a single observation, with no autograd machinery."""

    def __init__(self, net: QNetwork, rng: np.random.Generator):
        self.net = net
        self.rng = rng
        self.num_actions = net.num_actions
        self._numpy_layers = None if net.is_image else _numpy_view(net)
        # A plain MLP's layers as (weight, bias, ReLU after): one pass of the loop per layer (the
        # general loop's per-module steps were a large share of an action;
        # docs/design-notes.md#networks).
        kinds = [kind for kind, _, _ in self._numpy_layers or []]
        self._mlp = None if net.is_image or _LAYER_NORM in kinds else [
            (a, b, i + 1 < len(kinds) and kinds[i + 1] is _RELU)
            for i, (kind, a, b) in enumerate(self._numpy_layers) if kind is _LINEAR]

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """obs (*obs_shape) -> (A,)"""
        if self._mlp is not None:
            x = np.asarray(obs, dtype=np.float32).reshape(-1)  # (D,)
            for a, b, relu in self._mlp:
                x = a @ x  # (out,): a fresh array, so the in-place ops below never touch obs
                x += b
                if relu:
                    np.maximum(x, 0.0, out=x)
            return x  # (A,)
        if self._numpy_layers is not None:
            x = np.asarray(obs, dtype=np.float32).reshape(-1)  # (D,)
            for kind, a, b in self._numpy_layers:
                if kind is _LINEAR:
                    x = a @ x  # (out,): a fresh array, so the in-place ops below never touch obs
                    x += b
                elif kind is _RELU:
                    np.maximum(x, 0.0, out=x)
                else:  # layer norm, as torch computes it (biased variance)
                    mu = x.mean()
                    var = ((x - mu) ** 2).mean()
                    x = (x - mu) / np.sqrt(var + LAYER_NORM_EPS) * a + b
            return x  # (A,)
        with torch.inference_mode():
            return self.net(torch.as_tensor(obs).unsqueeze(0))[0].numpy()

    def q_values_batch(self, obs: np.ndarray) -> np.ndarray:
        """obs (N, *obs_shape) -> (N, A): one batched forward pass for N envs."""
        if self._numpy_layers is not None:
            x = np.asarray(obs, dtype=np.float32).reshape(len(obs), -1)  # (N, D)
            for kind, a, b in self._numpy_layers:
                if kind is _LINEAR:
                    x = x @ a.T  # (N, out)
                    x += b
                elif kind is _RELU:
                    np.maximum(x, 0.0, out=x)
                else:
                    mu = x.mean(axis=1, keepdims=True)
                    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
                    x = (x - mu) / np.sqrt(var + LAYER_NORM_EPS) * a + b
            return x  # (N, A)
        with torch.inference_mode():
            return self.net(torch.as_tensor(obs)).numpy()

    def act_batch(self, obs: np.ndarray, epsilon: float) -> np.ndarray:
        """Epsilon-greedy actions (N,) for N observations, each env exploring independently."""
        actions = self.q_values_batch(obs).argmax(axis=1)  # (N,)
        if epsilon > 0.0:
            explore = self.rng.random(len(actions)) < epsilon
            if explore.any():
                actions[explore] = self.rng.integers(self.num_actions, size=int(explore.sum()))
        return actions

    def act(self, obs: np.ndarray, epsilon: float) -> int:
        if epsilon > 0.0 and self.rng.random() < epsilon:
            return int(self.rng.integers(self.num_actions))
        # The array's method: np.argmax's wrapper is dearer per action (docs/design-notes.md#networks).
        return int(self.q_values(obs).argmax())


def _numpy_view(net: QNetwork) -> list[tuple[str, np.ndarray | None, np.ndarray | None]]:
    """The MLP as (kind, weight, bias) numpy views that share memory with the torch params."""
    layers: list[tuple[str, np.ndarray | None, np.ndarray | None]] = []
    for module in net.head:
        if isinstance(module, nn.Linear):
            layers.append((_LINEAR, module.weight.detach().numpy(), module.bias.detach().numpy()))
        elif isinstance(module, nn.LayerNorm):
            layers.append((_LAYER_NORM, module.weight.detach().numpy(), module.bias.detach().numpy()))
        elif isinstance(module, nn.ReLU):
            layers.append((_RELU, None, None))
        else:  # pragma: no cover - guarded by QNetwork's construction
            raise TypeError(f"no numpy forward for {module}")
    return layers


class FlatLayout:
    """Where each parameter lies in one flat float32 vector, in `parameters()` order: the only flatten
    and unflatten of weights (numpy arrays, or torch tensors for `views`)."""

    def __init__(self, shapes: Sequence[tuple]):
        self.shapes = [tuple(s) for s in shapes]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int).tolist()
        self.size = self.offsets[-1]

    def views(self, flat: np.ndarray) -> list[np.ndarray]:
        """Each parameter as a view into `flat` (writes to a view land in the vector)."""
        return [flat[a:b].reshape(shape) for a, b, shape in zip(self.offsets, self.offsets[1:], self.shapes)]

    def flatten(self, arrays: Sequence[np.ndarray]) -> np.ndarray:
        """A new flat vector of `arrays`."""
        out = np.empty(self.size, np.float32)
        for view, array in zip(self.views(out), arrays):
            np.copyto(view, array)
        return out

    def unflatten_into(self, flat: np.ndarray, arrays: Sequence[np.ndarray]) -> None:
        """Copy `flat` into `arrays`, in place."""
        for array, view in zip(arrays, self.views(flat)):
            np.copyto(array, view)
