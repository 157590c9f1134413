"""One preflight behind the three front doors: `python -m architectures`, the Python API and
`experiments.train` refuse the same bad input in the same line, before any work; an env that
gymnasium registers without an episode cap (MinAtar's games) trains with every design."""

import importlib.util
import os
import subprocess
import sys

import pytest

from architectures import train
from architectures.core.errors import ConfigError
from architectures.registry import NAMES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _line(stderr: str) -> str:
    [line] = [line for line in stderr.splitlines() if line.startswith("error:")]
    return line


def _cli(forked, design: str, values: dict) -> subprocess.CompletedProcess:
    args = [f"--{key}={value}" for key, value in values.items()]
    return forked.run(["architectures", design, *args], env={**os.environ, "PYTHONPATH": ROOT})


def _tracked(forked, design: str, values: dict, store) -> subprocess.CompletedProcess:
    args = [f"{key}={value}" for key, value in values.items()]
    return forked.run(["experiments.train", "with", f"design={design}", *args, "-F", str(store)],
                      env={**os.environ, "PYTHONPATH": ROOT})


BAD = {
    "too many workers": ("actor_learner", {"num_workers": 999}, "num_workers:"),
    "n_step past the episode cap": ("single_env", {"n_step": 600}, "n_step:"),
    "a checkpoint_path that is a folder": ("single_env", {"checkpoint_path": "FOLDER"}, "checkpoint_path:"),
    "actor replacement on the local backend": ("actor_learner", {"actor_restarts": 1}, "actor_restarts:"),
    "a value of the wrong type": ("single_env", {"batch_size": "abc"}, "batch_size: must be an integer"),
    "a value outside a Literal key's": ("single_env", {"loss": "l1"}, "loss: must be one of 'huber', 'mse'"),
    "a value out of its range": ("single_env", {"gamma": 1.5}, "gamma:"),
}
if importlib.util.find_spec("ray") is not None:  # the Ray backend's own preflight: a refusal, not a failed run
    BAD["an unreachable ray_address"] = ("actor_learner", {"backend": "ray", "ray_address": "127.0.0.1:1"},
                                         "ray_address:")
"""Each: a check of the machine, of the env or of the checkpoint, which the CLI made only under
--dry-run before (a folder as checkpoint_path reached the run)."""


@pytest.mark.parametrize("case", BAD)
def test_the_same_bad_input_is_the_same_line_from_the_cli_the_api_and_experiments_train(case, tmp_path, forked):
    """Each command line in a fork of a warm interpreter (tests/forked_commands.py): a refusal comes before
    any work, and its own line, status and stderr are the fork's as a subprocess's."""
    design, values, key = BAD[case]
    values = {k: (str(tmp_path) if v == "FOLDER" else v) for k, v in values.items()}
    with pytest.raises(ConfigError) as caught:
        train(design, total_env_steps=600, learning_starts=100, **values)
    from_api = f"error: {caught.value}"
    cli = _cli(forked, design, {"total_env_steps": 600, "learning_starts": 100, **values})
    tracked = _tracked(forked, design, {"total_env_steps": 600, "learning_starts": 100, **values}, tmp_path / "runs")
    assert from_api.startswith(f"error: {key}")
    assert (cli.returncode, _line(cli.stderr)) == (2, from_api), cli.stderr[-2000:]
    assert (tracked.returncode, _line(tracked.stderr)) == (2, from_api), tracked.stderr[-2000:]
    assert not os.path.isdir(tmp_path / "runs" / "1")  # nothing recorded
    assert "Traceback" not in cli.stderr + tracked.stderr


@pytest.mark.slow
@pytest.mark.parametrize("design", NAMES)
def test_minatar_asterix_as_minatar_names_it_trains_with_every_design(design):
    """gymnasium registers MinAtar/Asterix-v1 without an episode cap; it used to be refused."""
    with pytest.warns(RuntimeWarning, match="cut after 108,000 env steps"):
        result = train(design, env_id="MinAtar/Asterix-v1", total_env_steps=1_200, learning_starts=200,
                       eval_every=600, eval_episodes=2, hidden_sizes=(16,), batch_size=16, buffer_size=1_200,
                       num_workers=2, log_every=300, worker_timeout_s=60.0).result
    assert result["env_steps"] == 1_200 and len(result["holdout_curve"]) == 2
    assert (result["episode_cap"], result["episode_cap_source"]) == (108_000, "default")
    assert result["holdout_truncated"] == [0, 0]  # Asterix's episodes end on their own


def test_the_cli_help_lists_every_config_key():
    """argparse formats each help text with %: a docstring's "28% faster" made --help a traceback."""
    from architectures.core.config import describe

    proc = subprocess.run([sys.executable, "-m", "architectures", "single_env", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert all(f"--{key}" in proc.stdout for key in describe())
    # tyro's reading of the annotations: each key's type and a Literal key's values, with its default
    assert "--batch_size INT" in proc.stdout and "{huber,mse}" in proc.stdout and "(default: 128)" in proc.stdout
