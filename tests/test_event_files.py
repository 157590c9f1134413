"""Live curves (architectures/core/event_files.py, run/curves.py): every front door writes
TensorBoard event files while the run trains, from the main process, on env steps; a resumed
run's curves have no point twice; the switch turns them off. The files are read back with
TensorBoard's own reader, as `tensorboard --logdir` reads them."""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from architectures import train
from architectures.core.errors import EventFilesFailed
from architectures.core.event_files import TensorBoardReporter, tag
from architectures.core.metrics import NullReporter, Reporters
from architectures.core.schedules import EpsilonSchedule
from tests.tensorboard_page import missing_browser, scalars_page, serve

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = dict(env_id="CartPole-v1", total_env_steps=2_000, learning_starts=400, eval_every=1_000, eval_episodes=2,
            log_every=250, hidden_sizes=(16,), buffer_size=2_000, batch_size=16, num_workers=2, worker_timeout_s=30.0)


def _read(folder: str) -> EventAccumulator:
    events = EventAccumulator(folder, size_guidance={"scalars": 0, "histograms": 0, "tensors": 0})
    events.Reload()
    return events


def _steps(events: EventAccumulator, name: str) -> list[int]:
    return [e.step for e in events.Scalars(name)]


@pytest.mark.parametrize("design", ["single_env", "actor_learner", "hogwild", "high_utd", "vector_env", "pqn"])
def test_a_run_writes_its_curves_on_env_steps(tmp_path, design):
    extra = {"rollout_steps": 125} if design == "pqn" else {}  # 2 envs x 125 steps: a rollout ends on the grid
    result = train(design, tensorboard_log=tmp_path, **TINY, **extra)
    [folder] = glob.glob(str(tmp_path / "*"))
    named = design if design in ("single_env", "high_utd") else f"{design}_w2"
    assert os.path.basename(folder) == f"{named}_CartPole-v1_seed1"
    events = _read(folder)
    scalars, histograms = set(events.Tags()["scalars"]), set(events.Tags()["histograms"])
    assert {"throughput/env_steps_per_sec", "throughput/learning_env_steps_per_sec", "throughput/realised_utd",
            "learning/td_loss", "episodes/train_episode_return", "holdout/return_mean"} <= scalars
    assert {"learning/q_mean", "learning/q_max", "learning/grad_norm", "acting/epsilon"} <= scalars
    assert ("acting/replay_fill" in scalars) == (design != "pqn")  # pqn has none; hogwild's workers' together
    assert {"holdout/returns", "holdout/lengths"} <= histograms
    assert ("learning/q_taken" in histograms) == (design != "hogwild")  # hogwild's batches stay in its workers
    schedule = EpsilonSchedule(result.config.eps_start, result.config.eps_end, result.config.eps_decay_steps)
    epsilon = events.Scalars("acting/epsilon")
    if design in ("actor_learner", "hogwild"):  # the actors' own steps: at or past the run's logged step
        assert all(result.config.eps_end <= e.value <= schedule(e.step) + 1e-6 for e in epsilon)
        assert [e.value for e in epsilon] == sorted((e.value for e in epsilon), reverse=True)
    else:  # one schedule on the run's env steps
        assert [e.value for e in epsilon] == pytest.approx([schedule(e.step) for e in epsilon])
    holdout = events.Scalars("holdout/return_mean")
    assert [e.step for e in holdout] == [1_000, 2_000]
    assert [e.value for e in holdout] == pytest.approx([p["return_mean"] for p in result.result["holdout_curve"]])
    logged = _steps(events, "throughput/env_steps_per_sec")
    assert logged == sorted(set(logged)) and logged[0] >= 250 and logged[-1] <= 2_000  # the log's cadence, env steps
    assert min(_steps(events, "throughput/learning_env_steps_per_sec")) >= TINY["learning_starts"]
    if design in ("actor_learner", "hogwild"):  # each worker's share of the env steps
        assert {"workers/worker_share_min"} <= scalars and "workers/worker_env_step_share" in histograms
        shares = events.Histograms("workers/worker_env_step_share")[-1].histogram_value
        assert shares.num == 2 and shares.sum == pytest.approx(1.0)
    if design in ("actor_learner", "vector_env"):  # each source's share of the sampled transitions
        assert "workers/worker_sampled_share_min" in scalars and "workers/worker_sampled_share" in histograms
        sampled = events.Histograms("workers/worker_sampled_share")[-1].histogram_value
        assert sampled.num == 2 and sampled.sum == pytest.approx(1.0)
        roles = {"actor_learner": "actors", "vector_env": "envs"}[design]  # busy fractions, and the bound as text
        assert {"roles/busy_learner", f"roles/busy_{roles}"} <= scalars
        assert all(0.0 <= e.value <= 1.0 for e in events.Scalars("roles/busy_learner"))
        assert "roles/bound/text_summary" in events.Tags()["tensors"]
    if design == "actor_learner":  # the lag of what the learner sampled, and the acting weights' age at hand-off
        assert "learning/policy_lag" in histograms and "acting/actor_weights_staleness_max" in scalars
        assert "acting/weight_age" in histograms and "acting/weight_age_mean" in scalars
    if design == "hogwild":  # workers' overlapping writes
        assert "design/overlap_fraction" in scalars
    if design == "pqn":  # the rollouts: how many, the learning rate's anneal, the Q(lambda) targets' mean
        assert {"design/rollouts", "design/learning_rate", "design/lambda_return_mean"} <= scalars
        assert events.Scalars("design/rollouts")[-1].value == 7  # at 2,000 env steps: the 8th rollout of 2 x 125 not yet learned


def test_a_second_run_gets_its_own_folder(tmp_path):
    for _ in range(2):
        train("single_env", tensorboard_log=tmp_path, **{**TINY, "total_env_steps": 600, "eval_every": 600})
    assert sorted(os.listdir(tmp_path)) == ["single_env_CartPole-v1_seed1", "single_env_CartPole-v1_seed1_2"]


def test_a_resumed_writer_keeps_each_point_once(tmp_path):
    """A run killed after its checkpoint at 300 had written up to 500: the resumed process
    re-reports the holdouts up to 300 and writes from 301 again; the reader sees each step once,
    the resumed process's values after the checkpoint."""
    first = TensorBoardReporter(str(tmp_path))
    for step in (100, 200, 300, 400, 500):
        first.scalar("td_loss", 1.0, step)
        first.holdout({"env_steps": step, "return_mean": float(step), "returns": [step], "lengths": [1]})
    first.close()
    # TensorBoard reads a folder's event files in name order: the second of creation, then this
    # process's writer count, as text (so a 10th writer sorts before a 9th). A resumed run is a new
    # process seconds later at the least; here the second writer is made in a later second too.
    time.sleep(1.1)
    second = TensorBoardReporter(str(tmp_path))
    second.resumed(300)
    for step in (100, 200, 300):  # Run.resume re-reports the holdouts it saved
        second.holdout({"env_steps": step, "return_mean": float(step), "returns": [step], "lengths": [1]})
    for step in (400, 500):
        second.scalar("td_loss", 2.0, step)
        second.holdout({"env_steps": step, "return_mean": -float(step), "returns": [step], "lengths": [1]})
    second.close()
    events = _read(str(tmp_path))
    assert _steps(events, "holdout/return_mean") == [100, 200, 300, 400, 500]
    assert [e.value for e in events.Scalars("holdout/return_mean")] == [100, 200, 300, -400, -500]
    assert [(e.step, e.value) for e in events.Scalars("learning/td_loss")] == [
        (100, 1.0), (200, 1.0), (300, 1.0), (400, 2.0), (500, 2.0)]


def test_a_resumed_run_continues_its_curves_without_a_point_twice(tmp_path):
    """Killed whole (SIGKILL to its process group) once its first checkpoint exists, then run
    again: one folder, each holdout once, every curve's steps strictly increasing."""
    checkpoint, folder = tmp_path / "run.pt", tmp_path / "tb"
    cfg = {**TINY, "total_env_steps": 12_000, "eval_every": 4_000, "log_every": 500, "buffer_size": 12_000,
           "checkpoint_path": str(checkpoint), "checkpoint_every": 2_000}
    script = ("from architectures import train\n"
              "if __name__ == '__main__':\n"
              f"    train('single_env', tensorboard_log={str(folder)!r}, **{cfg!r})\n")
    command = [sys.executable, "-c", script]
    env = {**os.environ, "PYTHONPATH": ROOT}
    first = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    deadline = time.monotonic() + 120
    while not checkpoint.exists():
        assert first.poll() is None, first.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.02)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert os.listdir(folder) == ["single_env_CartPole-v1_seed1"]  # the resume continued its own folder
    events = _read(str(folder / "single_env_CartPole-v1_seed1"))
    assert _steps(events, "holdout/return_mean") == [4_000, 8_000, 12_000]
    for name in events.Tags()["scalars"]:
        steps = _steps(events, name)
        assert steps == sorted(set(steps)), name


def test_the_tracked_run_writes_beside_its_record_and_the_switch_turns_it_off(tmp_path):
    store = tmp_path / "runs"
    base = [sys.executable, "-m", "experiments.train", "with", "design=single_env", "total_env_steps=600",
            "learning_starts=100", "eval_every=300", "eval_episodes=2", "hidden_sizes=[16]", "log_every=100"]
    for switch in ("tensorboard=True", "tensorboard=False"):
        done = subprocess.run([*base, switch, "-F", str(store)], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": ROOT})
        assert done.returncode == 0, done.stderr[-2000:]
    [folder] = glob.glob(str(store / "1" / "tensorboard" / "*"))
    assert os.path.basename(folder) == "single_env_CartPole-v1_seed1"
    assert _steps(_read(folder), "holdout/return_mean") == [300, 600]
    assert not os.path.exists(store / "2" / "tensorboard")
    assert json.load(open(store / "2" / "config.json"))["tensorboard"] is False
    bad = subprocess.run([*base, "tensorboard=3", "-F", str(store)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": ROOT})
    assert bad.returncode == 2 and "tensorboard: must be true or false (got 3)" in bad.stderr


def test_the_command_line_writes_where_it_is_told(tmp_path):
    done = subprocess.run([sys.executable, "-m", "architectures", "single_env", "--tensorboard", str(tmp_path),
                           "--total_env_steps", "600", "--learning_starts", "100", "--eval_every", "600",
                           "--eval_episodes", "1", "--hidden_sizes", "[16]", "--log_every", "100"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr[-2000:]
    assert _steps(_read(str(tmp_path / "single_env_CartPole-v1_seed1")), "holdout/return_mean") == [600]


def test_reporters_fan_out_to_those_that_have_the_method():
    class Scalars:
        def __init__(self):
            self.seen = []

        def scalar(self, name, value, env_steps):
            self.seen.append((name, value, env_steps))

    plain, null = Scalars(), NullReporter()
    both = Reporters(plain, null, None)
    both.scalar("td_loss", 0.5, 10)
    both.histogram("q_taken", np.ones(3), 10)  # Scalars has none: skipped, not an error
    both.resumed(10)
    assert plain.seen == [("td_loss", 0.5, 10)] and len(both.reporters) == 2


def test_tags_group_by_what_they_measure():
    assert tag("env_steps_per_sec") == "throughput/env_steps_per_sec"
    assert tag("q_taken") == "learning/q_taken"
    assert tag("worker_share_min") == "workers/worker_share_min"
    assert tag("overlap_fraction") == "design/overlap_fraction"
    assert tag("epsilon_actor3") == "acting/epsilon_actor3" and tag("acting_weight_age") == "acting/weight_age"
    assert tag("busy_learner") == "roles/busy_learner" and tag("bound") == "roles/bound"


def test_event_files_that_cannot_be_written_fail_the_run_in_one_line(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the event folder should be")
    curves = TensorBoardReporter(str(blocker / "run"))
    with pytest.raises(EventFilesFailed, match=r"the event files in '.*not-a-folder/run' could not be written"):
        curves.scalar("td_loss", 1.0, 100)
    curves.scalar("td_loss", 1.0, 200)  # once failed, it writes nothing more and raises no second time
    curves.close()
    assert curves.failed


@pytest.mark.slow  # a TensorBoard server's start and page (10 s): the full suite's; the files themselves are quick's
def test_tensorboards_own_page_lists_the_run_and_its_holdout_curve(tmp_path):
    """A real run's folder served by `tensorboard --logdir` on localhost: its scalars page, in
    headless Chromium, lists the run and holdout/return_mean; the server is ended by its pid.
    CI sets REQUIRE_BROWSER=1, so there a missing browser fails the test instead of skipping it."""
    missing = missing_browser()
    if missing:
        why = f"no {', '.join(missing)}: install with `./setup.sh --browser` and `pip install -e '.[test]'`"
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    train("actor_learner", tensorboard_log=tmp_path, **TINY)
    shot = str(tmp_path / "scalars.png")
    with serve(str(tmp_path)) as url:
        shown = scalars_page(url, "actor_learner_w2_CartPole-v1_seed1", "holdout/return_mean", shot)
    assert shown["title"] == "TensorBoard"
    assert "actor_learner_w2_CartPole-v1_seed1" in shown["text"] and "holdout/return_mean" in shown["text"]
    assert os.path.getsize(shot) > 20_000  # a page with curves on it, not a blank screen


@pytest.mark.alone
@pytest.mark.slow
def test_a_minute_long_actor_learner_run_shows_its_first_curves_within_30_s(tmp_path):
    """The practitioner's shape with 4 actors, tracked as a user runs it (its 100k env steps take
    over a minute here): within 30 s of the command's start, its event files hold a throughput
    point and a TD-loss point on the env-step axis (looked at each second, the test stops at the
    first look that finds both). Then it is stopped (Ctrl-C) and its record kept."""
    store = tmp_path / "runs"
    started = time.time()
    run = subprocess.Popen([sys.executable, "-m", "experiments.train", "with", "practitioner_shape",
                            "design=actor_learner", "num_workers=4", "eval_every=50000", "-F", str(store)],
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True,
                           # Ctrl-C as a terminal delivers it, even where this test was started in the
                           # background (`cmd &` in a script ignores SIGINT, and the child would inherit that)
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        throughput = loss = []
        while time.time() - started < 30 and not (throughput and loss):  # what a user waits before looking
            time.sleep(1)
            assert run.poll() is None, run.stderr.read()[-2000:]  # still training: a minute-long run
            for folder in glob.glob(str(store / "1" / "tensorboard" / "*")):
                events = _read(folder)
                tags = events.Tags()["scalars"]
                throughput, loss = (events.Scalars(tag) if tag in tags else []
                                    for tag in ("throughput/env_steps_per_sec", "learning/td_loss"))
        assert throughput and loss and loss[0].step > 1_000  # after learning_starts, on env steps
        assert throughput[0].wall_time - started < 30
    finally:
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err[-2000:]
    assert json.loads((store / "1" / "run.json").read_text())["status"] == "INTERRUPTED"


def test_the_writer_cost_bench_prints_the_import_and_a_logs_cost(capsys):
    from experiments.benches import event_files as bench_event_files

    bench_event_files.main(["--logs", "3", "--scalars", "2", "--histograms", "1", "--rounds", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("import TensorBoard's writer: median ") and lines[0].endswith("over 1 fresh processes")
    assert [re.search(r"\), (\w+): median [0-9.]+ \[", line).group(1) for line in lines[1:]] == [
        "main_thread_ms", "process_cpu_ms"]


def _other_threads_cpu() -> float:
    """CPU seconds of this process's threads but the main one (Linux /proc)."""
    ticks, me = os.sysconf("SC_CLK_TCK"), str(os.getpid())
    total = 0.0
    for tid in os.listdir("/proc/self/task"):
        if tid != me:
            fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


@pytest.mark.alone
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads threads' CPU from Linux's /proc")
def test_a_large_histogram_leaves_no_thread_spinning(tmp_path):
    """A policy-lag window of 32k values: TensorBoard's own add_histogram took its sum of squares
    with a BLAS dot, whose OpenBLAS worker then spun ~0.1 s a histogram at the learner's priority
    (1.1 s of CPU taken from nice-19 actors in a 7-s run). Counted without BLAS, no thread spins."""
    curves = TensorBoardReporter(str(tmp_path))
    curves.scalar("td_loss", 1.0, 0)  # the writer's own thread exists before the count starts
    lags = np.random.default_rng(0).random(32_768)
    before = _other_threads_cpu()
    for step in range(1, 6):
        curves.histogram("policy_lag", lags, step)
        time.sleep(0.1)
    spun = _other_threads_cpu() - before
    curves.close()
    assert spun < 0.1, f"other threads used {spun:.2f} s of CPU while 5 histograms were written"
    [written] = _read(str(tmp_path)).Histograms("learning/policy_lag")[:1]
    assert written.histogram_value.num == 32_768 and written.histogram_value.sum == pytest.approx(lags.sum())
