"""Checkpoint files: written atomically, read back whole or not at all, and only by their own run.

A checkpoint is a plain dict of tensors, numpy arrays and numbers saved with torch.save. It is
written to `<path>.tmp` and renamed over `<path>`, so a run killed while saving leaves the
previous checkpoint intact, never a half-written one. It records the architecture and the
config that wrote it: a run resumes only from its own checkpoint, and a file left by a run with
another config is refused with one line naming the first key that differs (a silent resume of
someone else's run would mix two experiments in one result).
"""

from __future__ import annotations

import os

import torch

from architectures.config import ConfigError, DQNConfig

CHECKPOINT_FORMAT = 2
"""Bumped when the layout changes; a file of another format is refused, not misread."""
MAY_DIFFER = ("checkpoint_path", "checkpoint_every", "worker_timeout_s", "ray_address")
"""Keys a resumed run may change: where and how often it saves, and how it supervises workers.
Every other key shapes what is learned, so it must match the checkpoint's."""


def save_checkpoint(path: str, state: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str) -> dict | None:
    """The saved state, or None when there is no checkpoint yet."""
    if not path or not os.path.exists(path):
        return None
    try:
        # Our own file, holding numpy arrays and RNG states as well as tensors.
        return torch.load(path, weights_only=False)
    except Exception as err:  # noqa: BLE001 - any unreadable file is the same one-line error
        raise ConfigError(f"checkpoint_path: {path!r} cannot be read ({type(err).__name__}: {err}); "
                          "delete it to start the run afresh") from None


def stamp(architecture: str, cfg: DQNConfig) -> dict:
    """What a checkpoint records of the run that wrote it."""
    return {"format": CHECKPOINT_FORMAT, "architecture": architecture, "config": cfg.to_dict()}


def check_owner(saved: dict, architecture: str, cfg: DQNConfig) -> None:
    """Raise a one-line ConfigError unless `saved` was written by this architecture and config."""
    path = cfg.checkpoint_path
    if saved.get("format") != CHECKPOINT_FORMAT:
        raise ConfigError(f"checkpoint_path: {path!r} has checkpoint format {saved.get('format', 1)}, this suite "
                          f"writes {CHECKPOINT_FORMAT}; delete it to start the run afresh")
    if saved["architecture"] != architecture:
        raise ConfigError(f"checkpoint_path: {path!r} was written by {saved['architecture']}, not {architecture}; "
                          "delete it or choose another checkpoint_path")
    now = cfg.to_dict()
    for key, value in now.items():
        if key not in MAY_DIFFER and saved["config"].get(key) != value:
            raise ConfigError(f"checkpoint_path: {path!r} belongs to a run with {key}={saved['config'].get(key)!r} "
                              f"(this run has {value!r}); delete it or choose another checkpoint_path")


def remove_checkpoint(path: str) -> None:
    for name in (path, f"{path}.tmp"):
        if name and os.path.exists(name):
            os.remove(name)
