"""high_utd: the regression against single_env, resets, divergence detection, warnings."""

import os
import subprocess
import sys
import warnings

import pytest

from architectures.designs import high_utd, single_env
from tests.test_single_env import Recorder, untimed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_at_the_baseline_ratio_without_mitigations_it_is_single_env_bit_for_bit(tiny_cfg):
    base, high = Recorder(), Recorder()
    a = single_env.train(tiny_cfg, base)
    b = high_utd.train(tiny_cfg, high)
    for key in ("env_steps", "updates", "episodes", "holdout_curve", "final_holdout_return"):
        assert a[key] == b[key], key
    assert untimed(base.holdouts) == untimed(high.holdouts)  # per-episode holdout returns at every checkpoint
    for name in ("td_loss", "q_mean", "train_episode_return"):
        assert [x for x in base.scalars if x[0] == name] == [x for x in high.scalars if x[0] == name], name
    assert b["resets"] == 0 and b["diverged"] is False


@pytest.mark.parametrize("layers", ["last", "all"])
def test_resets_happen_on_their_period_and_learning_goes_on(tiny_cfg, layers):
    cfg = tiny_cfg.replace(utd=1.0, reset_period=150, reset_layers=layers)
    r = high_utd.train(cfg)
    assert r["updates"] == tiny_cfg.total_env_steps - tiny_cfg.learning_starts
    assert r["resets"] == r["updates"] // 150
    assert r["realised_utd"] == pytest.approx(1.0)


@pytest.mark.slow
def test_a_diverging_run_is_flagged(tiny_cfg):
    # The deadly triad at 8 updates per step: bootstrapping off a target synced every update,
    # gamma 0.999, no clipping, squared loss, a large step size. |Q| grows by orders of magnitude.
    cfg = tiny_cfg.replace(utd=8.0, lr=0.1, loss="mse", max_grad_norm=0.0, target_update_period=1, gamma=0.999,
                           n_step=1, double_dqn=False, hidden_sizes=(64, 64), log_every=100)
    runs = []
    for seed in (1, 2, 3):  # a net whose ReLUs all die early cannot blow up: take the first that does
        with pytest.warns(RuntimeWarning, match="utd=8 without layer_norm or reset_period"):
            runs.append(high_utd.train(cfg.replace(seed=seed)))
        if runs[-1]["diverged"]:
            break
    for r in runs:  # the flag says exactly what the numbers say
        assert r["diverged"] == (r["max_abs_q"] > high_utd.DIVERGENCE_FACTOR * r["return_scale"])
    assert runs[-1]["diverged"] is True and runs[-1]["max_grad_norm_before_clip"] > 0
    steady = high_utd.train(tiny_cfg.replace(utd=2.0))
    assert steady["diverged"] is False and steady["max_abs_q"] < steady["return_scale"] * high_utd.DIVERGENCE_FACTOR


def test_high_utd_without_mitigation_warns_and_with_one_does_not(tiny_cfg):
    with pytest.warns(RuntimeWarning, match="diverge"):
        high_utd.check_settings(tiny_cfg.replace(utd=16.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        high_utd.check_settings(tiny_cfg.replace(utd=16.0, layer_norm=True))
        high_utd.check_settings(tiny_cfg.replace(utd=16.0, reset_period=1_000))
        high_utd.check_settings(tiny_cfg.replace(utd=4.0))


def test_the_command_line_says_a_warning_in_one_plain_line():
    """A RunWarning on the command line reads as the errors do: `warning: ...`, with no file path,
    no `RuntimeWarning:` and no source line."""
    done = subprocess.run([sys.executable, "-m", "architectures", "high_utd", "--utd", "8", "--total_env_steps", "300",
                           "--learning_starts", "100", "--eval_every", "300", "--eval_episodes", "1", "--hidden_sizes",
                           "[16]", "--batch_size", "16"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr[-2000:]
    assert ("warning: utd=8 without layer_norm or reset_period: value estimates often diverge above utd 4 without "
            "a mitigation") in done.stderr.splitlines()
    assert "RuntimeWarning" not in done.stderr and ".py:" not in done.stderr
