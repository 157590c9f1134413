import time

import numpy as np
import pytest

from architectures import ARCHITECTURES, get_train_fn
from architectures.designs.single_env import train


class Recorder:
    def __init__(self):
        self.scalars, self.holdouts, self.progress_calls = [], [], 0

    def scalar(self, name, value, env_steps):
        self.scalars.append((name, value, env_steps))

    def holdout(self, result):
        self.holdouts.append(result)

    def progress(self, *args):
        self.progress_calls += 1


def test_run_reports_result_metrics_and_checkpoints(tiny_cfg):
    rec = Recorder()
    start = time.perf_counter()
    result = train(tiny_cfg, rec)
    wall = time.perf_counter() - start
    for key in ("env_steps", "updates", "train_seconds", "env_steps_per_sec", "updates_per_sec", "realised_utd",
                "final_holdout_return", "holdout_curve", "component_costs_us", "time_breakdown"):
        assert key in result
    assert result["env_steps"] == tiny_cfg.total_env_steps
    assert result["updates"] == (tiny_cfg.total_env_steps - tiny_cfg.learning_starts) // 4
    assert result["realised_utd"] == pytest.approx(tiny_cfg.utd)
    assert [h["env_steps"] for h in rec.holdouts] == [400, 800, 1200]
    assert result["final_holdout_return"] == rec.holdouts[-1]["return_mean"]
    # Evaluation is off the throughput clock.
    assert result["eval_seconds"] > 0
    assert result["train_seconds"] + result["eval_seconds"] <= wall
    assert result["env_steps_per_sec"] == pytest.approx(result["env_steps"] / result["train_seconds"])
    names = {name for name, _, _ in rec.scalars}
    assert {"train_episode_return", "env_steps_per_sec", "td_loss", "q_mean"} <= names
    assert rec.progress_calls == tiny_cfg.total_env_steps // tiny_cfg.log_every
    breakdown = result["time_breakdown"]
    assert breakdown["env_step"]["calls"] == tiny_cfg.total_env_steps
    assert breakdown["update"]["calls"] == result["updates"]


def test_same_seed_same_holdout_returns(tiny_cfg):
    a, b = train(tiny_cfg), train(tiny_cfg)
    assert a["holdout_curve"] == b["holdout_curve"]
    assert a["episodes"] == b["episodes"]


def test_different_seed_different_run(tiny_cfg):
    a, b = train(tiny_cfg), train(tiny_cfg.replace(seed=tiny_cfg.seed + 1))
    assert (a["holdout_curve"], a["episodes"]) != (b["holdout_curve"], b["episodes"])


@pytest.mark.parametrize("utd", [0.5, 1.0, 3.0])
def test_realised_utd_follows_the_config(tiny_cfg, utd):
    result = train(tiny_cfg.replace(utd=utd, total_env_steps=600))
    assert result["updates"] == int((600 - tiny_cfg.learning_starts) * utd)
    assert result["realised_utd"] == pytest.approx(utd)


def test_learns_cartpole_a_little(tiny_cfg):
    """Behaviour, not a benchmark: 6k steps lift the holdout return well above random (~20)."""
    result = train(tiny_cfg.replace(total_env_steps=6_000, hidden_sizes=(64, 64), eval_every=6_000,
                                    eval_episodes=5, eps_decay_steps=3_000, learning_starts=500, lr=1e-3))
    assert result["final_holdout_return"] > 60


def test_minatar_runs_with_the_conv_net(tiny_cfg):
    cfg = tiny_cfg.replace(env_id="MinAtar/Breakout-v1", max_episode_steps=10_000, total_env_steps=300,
                           learning_starts=100, eval_every=300,
                           eval_episodes=1, hidden_sizes=(32,), batch_size=8, log_every=100)
    result = train(cfg)
    assert result["updates"] == 50 and np.isfinite(result["final_holdout_return"])


def test_registry_names_single_env():
    assert get_train_fn("single_env") is train
    with pytest.raises(KeyError, match="valid: " + ", ".join(ARCHITECTURES)):
        get_train_fn("nope")


def test_timed_components_account_for_most_of_the_training_time(tiny_cfg):
    result = train(tiny_cfg)
    assert 0.0 < result["timed_fraction"] <= 1.0
    assert set(result["component_costs_us"]) >= {"act", "env_step", "replay_add", "sample", "update", "eval"}


def test_prioritized_replay_runs_and_keeps_the_update_ratio(tiny_cfg):
    result = train(tiny_cfg.replace(prioritized=True))
    assert result["updates"] == (tiny_cfg.total_env_steps - tiny_cfg.learning_starts) // 4
    assert np.isfinite(result["final_holdout_return"])


def test_cli_accepts_lowercase_booleans():
    from architectures.cli import parse_config

    assert parse_config(["--prioritized", "true", "--layer_norm", "False"]).prioritized is True


def test_training_episodes_are_logged_as_window_means_on_the_log_cadence(tiny_cfg):
    rec = Recorder()
    train(tiny_cfg, rec)
    returns = [(v, s) for n, v, s in rec.scalars if n == "train_episode_return"]
    # At most one value per log_every window, whatever the number of episodes (MongoDB keeps
    # each metric in one document, capped at 16 MB).
    assert 0 < len(returns) <= tiny_cfg.total_env_steps // tiny_cfg.log_every
    assert all(s % tiny_cfg.log_every == 0 and v >= 1 for v, s in returns)


class Killed(Exception):
    """Raised by a reporter to stop a run where a kill would."""


def untimed(holdouts: list[dict]) -> list[dict]:
    """Holdout results without the training clock, which differs between any two runs."""
    return [{k: v for k, v in h.items() if k != "train_seconds"} for h in holdouts]


class KillAt(Recorder):
    """Stops the run from inside, as a kill would, once it has passed `step`."""

    def __init__(self, step):
        super().__init__()
        self.step = step

    def progress(self, env_steps, *args):
        if env_steps >= self.step:
            raise Killed


def test_a_resumed_run_ends_exactly_as_an_uninterrupted_one(tiny_cfg, tmp_path):
    import os

    cfg = tiny_cfg.replace(total_env_steps=2_000, eval_every=500, checkpoint_every=300,
                           checkpoint_path=str(tmp_path / "run.pt"))
    whole = Recorder()
    expected = train(cfg.replace(checkpoint_path=str(tmp_path / "other.pt")), whole)
    with pytest.raises(Killed):
        train(cfg, KillAt(1_400))
    assert os.path.exists(cfg.checkpoint_path)
    resumed = Recorder()
    got = train(cfg, resumed)
    for key in ("env_steps", "updates", "episodes", "holdout_curve", "final_holdout_return"):
        assert got[key] == expected[key], key
    # Per-episode holdout returns at every checkpoint, and every TD loss logged after the resume,
    # are identical: same weights, same batches, same exploration.
    assert untimed(resumed.holdouts) == untimed(whole.holdouts)  # everything but the clock
    resumed_losses = [(s, v) for n, v, s in resumed.scalars if n == "td_loss"]
    whole_losses = dict((s, v) for n, v, s in whole.scalars if n == "td_loss")
    assert resumed_losses and all(whole_losses[s] == v for s, v in resumed_losses)
    assert resumed_losses[0][0] < 2_000 and len(resumed_losses) < len(whole_losses)  # it did resume mid-run
    assert not os.path.exists(cfg.checkpoint_path)  # a finished run leaves no checkpoint behind


def test_each_checkpoint_records_the_training_clock_without_evaluation(tiny_cfg):
    result = train(tiny_cfg.replace(eval_every=400))
    seconds = result["checkpoint_train_seconds"]
    assert len(seconds) == len(result["holdout_curve"]) == 3
    assert all(0 < a < b for a, b in zip(seconds, seconds[1:]))
    assert seconds[-1] <= result["train_seconds"]  # evaluation is off this clock too
