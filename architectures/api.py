"""The suite as a library, after Stable-Baselines3's `learn` / `predict` / `save` / `load`.

    from architectures import train, load
    agent = train("actor_learner", env_id="my_envs:Corridor-v0", num_workers=4)
    agent.act(obs); agent.save("corridor.pt"); load("corridor.pt").act(obs)  # the same action

`train` runs a design in this process, without Sacred, exactly as `python -m architectures`
does (its workers spawned the same way, so a script calling it needs the
`if __name__ == "__main__":` guard), after the checks the tracked CLI makes before any process
starts: a bad key, env or machine raises the CLI's one-line ConfigError. It returns a `Result`:
the dict the CLI stores and the trained online Q-network, a CPU module that Run.result hands
over through the reporter's `trained` hook (run/base.py: Run.hand_over).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np
import torch

from architectures import ARCHITECTURES, before_run, get_train_fn
from architectures.core.config import ConfigError, DQNConfig
from architectures.core.event_files import TensorBoardReporter, run_folder
from architectures.core.metrics import NullReporter, PrintReporter, Reporter, Reporters
from architectures.core.networks import GreedyPolicy, QNetwork

FORMAT = "parallel-dqn-study agent 1"
"""What a saved agent's file says it is; a file saying otherwise is refused, not misread."""


def event_folder(root: str | os.PathLike, design: str, cfg: DQNConfig) -> str:
    """The run's folder under `root`: named by design, workers, env and seed, with _2, _3, ... for
    a later run of the same (SB3 counts its runs the same way); a run with a checkpoint_path
    continues its own folder, so a resume continues its curves."""
    base = run_folder(os.fspath(root), design, cfg)
    folder, count = base, 1
    while not cfg.checkpoint_path and os.path.exists(folder):
        count += 1
        folder = f"{base}_{count}"
    return folder


class _Keeper:
    """An API run's reporter: passes the numbers on to `inner` and keeps the trained network."""

    def __init__(self, inner: Reporter):
        self.inner, self.net = inner, None

    def scalar(self, name: str, value: float, env_steps: int) -> None:
        self.inner.scalar(name, value, env_steps)

    def histogram(self, name: str, values, env_steps: int) -> None:
        self.inner.histogram(name, values, env_steps)

    def text(self, name: str, value: str, env_steps: int) -> None:
        self.inner.text(name, value, env_steps)

    def resumed(self, env_steps: int) -> None:
        self.inner.resumed(env_steps)

    def holdout(self, result: dict) -> None:
        self.inner.holdout(result)

    def progress(self, env_steps: int, total: int, steps_per_sec: float, last_return: float | None) -> None:
        self.inner.progress(env_steps, total, steps_per_sec, last_return)

    def trained(self, net: QNetwork) -> None:
        self.net = net
        if hasattr(self.inner, "trained"):
            self.inner.trained(net)


@dataclass
class Result:
    """A trained agent: `design`, its `config`, the `q_network` (CPU) and the run's `result` dict."""

    design: str
    config: DQNConfig
    q_network: QNetwork = field(repr=False)
    result: dict = field(repr=False)
    _policy: GreedyPolicy | None = field(default=None, init=False, repr=False, compare=False)

    def q_values(self, obs) -> np.ndarray:
        """Q-values (num_actions,) of one observation."""
        shape = np.shape(obs)
        if shape != self.q_network.obs_shape:
            raise ValueError(f"observation of shape {shape}; this agent takes {self.q_network.obs_shape}")
        if self._policy is None:  # numpy views of the weights for an MLP, as the designs act
            self._policy = GreedyPolicy(self.q_network, np.random.default_rng(0))
        return self._policy.q_values(obs)

    def act(self, obs) -> int:
        """The greedy action for one observation."""
        return int(np.argmax(self.q_values(obs)))

    def save(self, path: str | os.PathLike) -> None:
        """One file, written atomically (a temp file renamed over `path`): the network's weights and
        shape, the config, the design and the result, read back by `load`."""
        net = self.q_network
        state = {"format": FORMAT, "design": self.design, "config": self.config.to_dict(),
                 "network": {"obs_shape": list(net.obs_shape), "num_actions": net.num_actions,
                             "hidden_sizes": list(net.hidden_sizes), "layer_norm": net.layer_norm},
                 "state_dict": {k: v.detach().cpu() for k, v in net.state_dict().items()},
                 "result": json.dumps(self.result, default=_plain)}  # a string: torch.load(weights_only=True) reads it back
        path = os.fspath(path)
        tmp = f"{path}.tmp"
        try:
            torch.save(state, tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


def _plain(value):
    """numpy scalars and arrays in a result, as JSON takes them."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def train(design: str, config: DQNConfig | dict | None = None, /, *, reporter: Reporter | None = None,
          progress: bool = False, tensorboard_log: str | os.PathLike | None = None, **overrides) -> Result:
    """Train `design` (a name in architectures.registry; `backend="ray"` picks actor_learner's Ray
    backend) with `config` and any DQNConfig keys as keyword arguments, and return the `Result`.
    `progress` prints progress lines on stderr; `reporter` receives the run's numbers instead;
    `tensorboard_log` (SB3's name) writes the run's curves there while it trains
    (`tensorboard --logdir` that folder). Raises ConfigError (one line) before any process
    starts, RunDiverged if the run diverges."""
    if design not in ARCHITECTURES:
        raise ConfigError(f"design: unknown {design!r} (valid: {', '.join(ARCHITECTURES)})")
    base = config.to_dict() if isinstance(config, DQNConfig) else dict(config or {})
    cfg = DQNConfig.from_dict({**base, **overrides})
    before_run(design, cfg)  # the CLI's and experiments.train's checks, checkpoint_path's included
    curves = TensorBoardReporter(event_folder(tensorboard_log, design, cfg)) if tensorboard_log else None
    keeper = _Keeper(Reporters(reporter or (PrintReporter() if progress else NullReporter()), curves))
    try:
        result = get_train_fn(design, cfg.backend)(cfg, keeper)
    finally:
        if curves is not None:
            curves.close()
    if keeper.net is None:  # every design ends in Run.result, which hands the network over
        raise RuntimeError(f"{design} returned without handing over its trained network")
    return Result(design, cfg, keeper.net, result)


def load(path: str | os.PathLike) -> Result:
    """The agent `Result.save` wrote. Its config is checked as any config is, so a user env's
    module must be importable (on PYTHONPATH) here too."""
    try:
        saved = torch.load(os.fspath(path), weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unreadable file is the same one-line error
        raise ValueError(f"{os.fspath(path)!r} cannot be read as a saved agent ({type(err).__name__}: "
                         f"{str(err).splitlines()[0] if str(err) else 'empty'})") from None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        raise ValueError(f"{os.fspath(path)!r} is not an agent saved by architectures.Result.save")
    shape = saved["network"]
    net = QNetwork(shape["obs_shape"], shape["num_actions"], shape["hidden_sizes"], shape["layer_norm"])
    net.load_state_dict(saved["state_dict"])
    return Result(saved["design"], DQNConfig.from_dict(saved["config"]), net, json.loads(saved["result"]))
