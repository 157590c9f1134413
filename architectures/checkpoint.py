"""Checkpoint files: written atomically, read back whole or not at all.

A checkpoint is a plain dict of tensors, numpy arrays and numbers saved with torch.save. It is
written to `<path>.tmp` and renamed over `<path>`, so a run killed while saving leaves the
previous checkpoint intact, never a half-written one.
"""

from __future__ import annotations

import os

import torch


def save_checkpoint(path: str, state: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str) -> dict | None:
    """The saved state, or None when there is no checkpoint yet."""
    if not path or not os.path.exists(path):
        return None
    # Our own file, holding numpy arrays and RNG states as well as tensors.
    return torch.load(path, weights_only=False)


def remove_checkpoint(path: str) -> None:
    for name in (path, f"{path}.tmp"):
        if name and os.path.exists(name):
            os.remove(name)
