"""A user's own env, named the gymnasium way (`module:EnvId`), in every design and every process
that makes an env; one-line errors for a module that does not import, an id it does not
register and spaces DQN cannot use; and sweeps that take `with ...` overrides."""

import json
import os
import subprocess
import sys

import pytest

from architectures import get_train_fn
from architectures.core.config import ConfigError, DQNConfig
from architectures.registry import NAMES
from tests.test_sweep import statuses

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme_env() -> str:
    """The README's example env, as the README prints it."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    block = text.split("<!-- example-env:", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    return block


CORRIDOR = _readme_env()
BROKEN = {
    "user_envs_broken": "raise ImportError('needs the simulator library sim3d')\n",
    "user_envs_empty": "x = 1\n",
    "user_envs_spaces": CORRIDOR.replace("Corridor-v0", "BoxActions-v0").replace(
        "action_space = gym.spaces.Discrete(2)", "action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)")
    + CORRIDOR.replace("Corridor-v0", "DiscreteObs-v0").replace(
        "observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)",
        "observation_space = gym.spaces.Discrete(11)")
    + "\n\nclass Crashes(gym.Env):\n    def __init__(self):\n"
      "        raise RuntimeError('simulator licence not found\\n(ask the admin)')\n\n\n"
      "gym.register('Crashes-v0', entry_point=Crashes)\n",
}
ENV_ID = "user_envs:Corridor-v0"  # the README names its module my_envs; here it is user_envs.py
TINY = dict(env_id=ENV_ID, total_env_steps=2_000, eval_every=1_000, eval_episodes=2, learning_starts=200,
            hidden_sizes=(16,), buffer_size=2_000, batch_size=16, log_every=500, num_workers=2,
            worker_timeout_s=30.0)


@pytest.fixture(scope="module")
def env_dir(tmp_path_factory):
    """A folder outside the repo holding the user's modules, on sys.path and PYTHONPATH."""
    folder = tmp_path_factory.mktemp("user_code")
    (folder / "user_envs.py").write_text(CORRIDOR)
    for name, text in BROKEN.items():
        (folder / f"{name}.py").write_text(text)
    sys.path.insert(0, str(folder))  # spawned workers get the parent's sys.path
    yield folder
    sys.path.remove(str(folder))


def _env(folder) -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize("architecture, extra", [(name, {"utd": 1.0} if name == "high_utd" else {}) for name in NAMES]
                         + [("hogwild", {"hogwild_replay": "shared"})])
@pytest.mark.slow
def test_every_design_trains_on_a_users_env(env_dir, architecture, extra):
    result = get_train_fn(architecture)(DQNConfig(**{**TINY, **extra}))
    assert result["env_steps"] == 2_000 and [c["env_steps"] for c in result["holdout_curve"]] == [1_000, 2_000]
    assert result["updates"] > 0


@pytest.mark.slow
def test_actor_learner_on_ray_trains_on_a_users_env(env_dir, tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (optional extra): pip install -e '.[ray]'")
    args = [f"{k}={json.dumps(list(v) if isinstance(v, tuple) else v) if not isinstance(v, str) else v}"
            for k, v in TINY.items()]
    proc = subprocess.run([sys.executable, "-m", "experiments.train", "with", "actor_learner", "backend=ray", *args,
                           "-F", str(tmp_path / "runs"), "-l", "WARNING"], cwd=ROOT, env=_env(env_dir),
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = statuses(tmp_path / "runs").values()
    assert run["status"] == "COMPLETED" and run["result"]["env_steps"] == 2_000 and run["result"]["backend"] == "ray"


@pytest.mark.parametrize("env_id, message", [
    ("user_envs_broken:Any-v0", "env_id: module 'user_envs_broken' does not import (ImportError: needs the "
                                "simulator library sim3d); is it on PYTHONPATH?"),
    ("no_such_module:Any-v0", "env_id: module 'no_such_module' does not import (ModuleNotFoundError"),
    ("user_envs_empty:Nope-v0", "env_id: module 'user_envs_empty' does not register a gymnasium env 'Nope-v0'"),
    ("MyCorridor-v0", "env_id: unknown gymnasium id 'MyCorridor-v0'; an env of your own is named "
                    "'your_module:YourEnv-v0'"),
])
def test_a_bad_env_id_is_one_line_naming_the_key(env_dir, env_id, message):
    from architectures import preflight

    with pytest.raises(ConfigError) as info:
        preflight("single_env", DQNConfig(env_id=env_id))
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


@pytest.mark.parametrize("env_id, message", [
    ("user_envs_spaces:BoxActions-v0", "has action space Box(-1.0, 1.0, (1,), float32); DQN needs a Discrete"),
    ("user_envs_spaces:DiscreteObs-v0", "has observation space Discrete(11); the Q-network needs a Box"),
    ("user_envs_spaces:Crashes-v0", "could not be made: RuntimeError: simulator licence not found (ask the admin)"),
])
@pytest.mark.slow
def test_spaces_dqn_cannot_use_stop_the_run_before_anything_is_recorded(env_dir, tmp_path, env_id, message, forked):
    out = tmp_path / "runs"  # a refusal before any run: in a fork of a warm interpreter (tests/forked_commands.py)
    proc = forked.run(["experiments.train", "with", f"env_id={env_id}", "-F", str(out)], env=_env(env_dir), timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith(f"error: env_id: '{env_id}' ")
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() or statuses(out) == {}


# ---------------------------------------------------------------------- sweeps with overrides
def _sweep(args, folder, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.sweep", *args], cwd=ROOT, env=_env(folder),
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_the_smoke_sweep_runs_on_a_users_env_and_a_restart_skips_it(env_dir, tmp_path):
    """The sweep's path to a user's env: each run a process of its own, finding the env on PYTHONPATH,
    one of them spawning actors that import it too. Two cells, not all six: every design's training on
    the env is test_every_design_trains_on_a_users_env's (the six cells took 39 s of the suite, these two 8 s)."""
    out = str(tmp_path / "out")
    picked = ("single_env", "actor_learner")
    args = ["smoke", "--out", out, "--jobs", "2", "--cells", ",".join(picked),  # two at a time: mostly start-up
            "with", f"env_id={ENV_ID}", "total_env_steps=3000", "eval_every=1500"]
    first = _sweep(args, env_dir)
    assert first.returncode == 0, first.stderr[-3000:]
    runs = statuses(out)
    assert len(runs) == len(picked) and all(r["status"] == "COMPLETED" for r in runs.values())
    assert {r["result"]["design"] for r in runs.values()} == set(picked)
    assert all(r["result"]["env_steps"] == 3_000 for r in runs.values())
    assert all(r["meta"]["comment"] == f"with env_id={ENV_ID} eval_every=1500 total_env_steps=3000"
               for r in runs.values())  # stored with each run, for the report's labels
    assert f"[with env_id={ENV_ID} eval_every=1500 total_env_steps=3000]" in first.stdout  # the summary
    again = _sweep(args, env_dir)
    assert again.returncode == 0 and f"{len(picked)} already completed, 0 to run" in again.stderr


def test_overrides_make_other_runs_and_show_in_the_listing(env_dir, tmp_path, forked):
    from experiments.sweeps.grid import Overrides, expand
    from experiments.sweeps.catalog import SWEEPS

    plain = {r.run_id for r in expand(SWEEPS["scaling"], "small", 1)}
    mine = expand(SWEEPS["scaling"], "small", 1, Overrides.parse([f"env_id={ENV_ID}", "hidden_sizes=[256,256]"]))
    cartpole = [r for r in expand(SWEEPS["scaling"], "small", 1) if r.named[0] == "cartpole"]
    assert len(cartpole) < len(plain)  # the sweep also holds MinAtar cells ...
    assert plain.isdisjoint(r.run_id for r in mine) and len(mine) == len(cartpole)  # ... which a new env_id leaves out
    assert {r.named[0] for r in mine} == {"cartpole"}
    assert all(r.config()["env_id"] == ENV_ID and r.config()["hidden_sizes"] == [256, 256] for r in mine)
    again = expand(SWEEPS["scaling"], "small", 1, Overrides.parse(["hidden_sizes=[256,256]", f"env_id={ENV_ID}"]))
    assert [r.run_id for r in again] == [r.run_id for r in mine]  # the same overrides: the same runs
    dry = forked.run(["experiments.sweep", "scaling", "--dry-run", "--out", str(tmp_path / "o"), "with",
                      "hidden_sizes=[256,256]"], env=_env(env_dir))
    assert dry.returncode == 0 and dry.stdout.count("[with hidden_sizes=[256, 256]]") == len(plain)


@pytest.mark.parametrize("args, message", [
    (["with", "no_such_key=1"], "error: no_such_key: unknown config key"),
    (["with", "lr=-1"], "error: lr: must be a number > 0"),
    (["with", "no_such_config"], "error: with no_such_config: unknown named config"),
    (["with", "env_id=user_envs_empty:Nope-v0"], "error: env_id: module 'user_envs_empty' does not register"),
    (["with", "seed=3"], "error: seed: set by the sweep itself"),
    (["with", "hogwild"], "error: with hogwild: a design's named config"),
    (["with"], "error: with: name a config or KEY=VALUE"),
])
def test_a_bad_override_stops_the_sweep_before_any_run(env_dir, tmp_path, args, message, forked):
    out = tmp_path / "out"  # a refusal before any run: in a fork of a warm interpreter (tests/forked_commands.py)
    proc = forked.run(["experiments.sweep", "smoke", "--out", str(out), *args], env=_env(env_dir), timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() or statuses(out) == {}
