"""The Sacred experiment: one training run of one design, tracked.

    python -m experiments.train with design=single_env env_id=CartPole-v1 total_env_steps=50000 seed=3 -F results/runs
    python -m experiments.train with cartpole seed=3            # named config, stored under results/runs
    python -m experiments.train with cartpole -m mongodb://localhost:27017/dqn   # MongoDB instead
    python -m experiments.train print_config with minatar_breakout

With no observer flag the run is stored by a FileStorageObserver under results/runs (the
embedded default). Bad config values stop the command before any run is recorded, with a
one-line error naming the key and its valid range (exit code 2).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import signal
import sys
import warnings

import sacred.experiment
from sacred import SETTINGS, Experiment
from sacred.utils import apply_backspaces_and_linefeeds

from architectures import ARCHITECTURES, before_run, get_train_fn
from architectures.core.config import ConfigError, DQNConfig
from architectures.core.envs import env_spec
from architectures.core.errors import EventFilesFailed, RunDiverged, RunError, RunWarning, plain_warnings
from architectures.core.event_files import TensorBoardReporter
from architectures.core.limits import checkpoint_bytes
from architectures.core.metrics import Reporters
from architectures.run.checkpoint import remove_checkpoint
from experiments.tracking.configs import NAMED_CONFIGS, algorithm_values
from experiments.tracking.host import HOST_INFO, store_source_diff
from experiments.tracking.store import (
    AtomicFileStorageObserver,
    RecordingMongoObserver,
    StoreWriteFailed,
    check_free_space,
    event_files_failure,
    expected_record_bytes,
    run_event_folder,
    store_failure,
)
from experiments.sweeps.spec import CELL_META_ENV, RAY_NODE_ENV, RUNS_AT_ONCE_ENV

# Sacred's default "fd" capture tees the file descriptors through a subprocess and can deadlock
# with child processes (sacred#705); "sys" capture only swaps sys.stdout/stderr.
SETTINGS.CAPTURE_MODE = "sys"
DEFAULT_RUNS_DIR = "results/runs"
ex = Experiment("parallel_dqn", save_git_info=False, additional_host_info=HOST_INFO)
ex.captured_out_filter = apply_backspaces_and_linefeeds
ex.add_config(dict(design="single_env", tensorboard=True, **DQNConfig().to_dict()))
ex.add_config(architecture=None)  # the old spelling of `design`, still read (build_config); Sacred refuses keys it has not seen
for _name, _values in NAMED_CONFIGS.items():
    ex.add_named_config(_name, _values)


_ANNOUNCED: set[str] = set()


def build_config(config: dict) -> tuple[str, DQNConfig]:
    """Sacred's config dict -> (design, DQNConfig); raises ConfigError on bad values. `architecture=`,
    the old spelling of `design=`, is still read, and said once."""
    design = config.get("design")
    if config.get("architecture") is not None:
        design = config["architecture"]
        if design not in _ANNOUNCED:  # said once, not at each of the config hook's and the run's reads
            _ANNOUNCED.add(design)
            warnings.warn(f"architecture={design}: the old spelling of design=; read as design={design}", RunWarning,
                          stacklevel=2)
    if design not in ARCHITECTURES:
        raise ConfigError(f"design: unknown {design!r} (valid: {', '.join(ARCHITECTURES)})")
    if not isinstance(config.get("tensorboard", True), bool):
        raise ConfigError(f"tensorboard: must be true or false (got {config['tensorboard']!r})")
    return design, DQNConfig.from_dict(algorithm_values(config))


@ex.config_hook
def _validate(config: dict, command_name: str, logger) -> dict:
    # Runs before any observer sees the run: a bad value, a run this machine cannot hold (shared
    # memory, free space), or a checkpoint it cannot use or another run holds records nothing.
    try:
        design, cfg = build_config(config)
        if command_name == "main":
            before_run(design, cfg)  # as the CLI and the API check (and takes the checkpoint's lock)
            check_store_space(design, cfg)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    return {}


def check_store_space(design: str, cfg: DQNConfig) -> None:
    """The file stores and the checkpoint's folder can hold what the run will write (its records;
    a checkpoint and its next version, side by side for an instant)."""
    for observer in ex.observers:
        if isinstance(observer, AtomicFileStorageObserver):
            check_free_space(observer.basedir, expected_record_bytes(cfg), "the run store")
    if cfg.checkpoint_path and cfg.checkpoint_every:
        need = 2 * checkpoint_bytes(design, cfg, env_spec(cfg.env_id))  # the old one and the next
        check_free_space(os.path.dirname(os.path.abspath(cfg.checkpoint_path)), need, "checkpoint_path")


class SacredReporter:
    """Architecture metrics -> Sacred (main process only), plus a progress bar on stderr."""

    def __init__(self, run, total_env_steps: int):
        from tqdm import tqdm

        self.run = run
        self.run.info["holdout"] = []
        self.bar = tqdm(total=total_env_steps, unit="step", unit_scale=True, dynamic_ncols=True,
                        mininterval=2.0, file=sys.stderr, desc=f"{run.config.get('architecture') or run.config['design']}")
        self.last_return: float | None = None

    def scalar(self, name: str, value: float, env_steps: int) -> None:
        self.run.log_scalar(name, value, env_steps)

    def holdout(self, result: dict) -> None:
        self.last_return = result["return_mean"]
        self.run.log_scalar("holdout_return_mean", result["return_mean"], result["env_steps"])
        self.run.info["holdout"].append(result)  # per-episode returns and lengths

    def progress(self, env_steps: int, total: int, steps_per_sec: float, last_return: float | None) -> None:
        failure = store_failure(self.run.observers)  # a record that could not be written stops the run here
        if failure is not None:
            raise StoreWriteFailed(failure)
        self.bar.update(env_steps - self.bar.n)
        last = "-" if last_return is None else f"{last_return:.1f}"
        self.bar.set_postfix_str(f"{steps_per_sec:,.0f} steps/s, holdout {last}", refresh=False)

    def close(self) -> None:
        self.bar.close()


@ex.main
def main(_config: dict, _run) -> dict:
    design, cfg = build_config(_config)
    store_source_diff(_run)  # a run from uncommitted code keeps its diff beside its record
    _run.info["torch_threads"] = cfg.torch_threads
    placed = os.environ.get(RAY_NODE_ENV)  # a --ray sweep's run: the node Ray placed it on
    _run.info["node"] = json.loads(placed) if placed else {"hostname": socket.gethostname()}
    sacred_reporter = SacredReporter(_run, cfg.total_env_steps)
    curves = TensorBoardReporter(run_event_folder(_run, design, cfg)) if _config.get("tensorboard", True) else None
    reporter = Reporters(sacred_reporter, curves)
    try:
        try:
            result = get_train_fn(design, cfg.backend)(cfg, reporter)
        except RunDiverged as err:  # recorded as diverged, with where and why; cli() exits 3
            result = err.result()
            remove_checkpoint(cfg.checkpoint_path)  # an outcome, not an interruption: nothing to resume
        except BaseException:
            if curves is not None:
                curves.failed = True  # the run's own fault is the one to report: close quietly
            raise
        finally:
            sacred_reporter.close()
            if curves is not None:
                curves.close()  # the last points' flush: a failure here fails the run
    except EventFilesFailed as err:
        raise event_files_failure(_run, err) from None
    # A sweep's --jobs N says how many runs shared the machine with this one: its speed is a
    # measurement only at 1 (the report quotes no other). Run by hand, it ran alone.
    at_once = os.environ.get(RUNS_AT_ONCE_ENV, "1")
    cited = os.environ.get(CELL_META_ENV)  # what the sweep's cell says of this run (the predictions it tests)
    return {"design": design, **result, "runs_at_once": int(at_once) if at_once.isdigit() else 1,
            **({"cell_meta": json.loads(cited)} if cited else {})}


OBSERVER_FLAGS = ("-F", "--file_storage", "-m", "--mongo_db", "-s", "--sql", "-t", "--tiny_db", "-u",
                  "--unobserved", "-S", "--s3")


DEFAULT_MONGO_DB = "parallel_dqn"


def mongo_target(url: str) -> tuple[str, str]:
    """A mongodb:// URL -> (url, database name); the database defaults to parallel_dqn."""
    from pymongo.errors import InvalidURI
    from pymongo.uri_parser import parse_uri

    if not url.startswith(("mongodb://", "mongodb+srv://")):
        raise SystemExit(f"error: --mongo: expected a mongodb:// URL (got {url!r})")
    try:
        database = parse_uri(url).get("database")
    except (InvalidURI, ValueError) as err:
        raise SystemExit(f"error: --mongo: {err} (got {url!r})") from None
    return url, database or DEFAULT_MONGO_DB


def attach_observers(experiment: Experiment, argv: list[str], default_dir: str = DEFAULT_RUNS_DIR) -> list[str]:
    """Handle `--mongo URL` (Sacred's own -m takes HOST:PORT:DB only) and the default file store;
    returns the argv left for Sacred."""
    argv = list(argv)
    if "--mongo" in argv:
        at = argv.index("--mongo")
        if at + 1 >= len(argv):
            raise SystemExit("error: --mongo needs a URL, e.g. mongodb://localhost:27017/dqn")
        url, database = mongo_target(argv[at + 1])
        del argv[at:at + 2]
        experiment.observers.append(RecordingMongoObserver(url=url, db_name=database))
    elif any(arg.split("=")[0] in ("-F", "--file_storage") for arg in argv[1:]):
        at = next(i for i, arg in enumerate(argv) if i and arg.split("=")[0] in ("-F", "--file_storage"))
        if "=" in argv[at]:
            folder, cut = argv[at].split("=", 1)[1], 1
        elif at + 1 < len(argv):
            folder, cut = argv[at + 1], 2
        else:
            raise SystemExit(f"error: {argv[at]} needs a folder")
        del argv[at:at + cut]
        experiment.observers.append(AtomicFileStorageObserver(folder))  # Sacred's own, made atomic
    elif not any(arg.split("=")[0] in OBSERVER_FLAGS for arg in argv[1:]):
        experiment.observers.append(AtomicFileStorageObserver(default_dir))
    return argv


def check_named_configs(argv: list[str]) -> None:
    """An unknown named config after `with` is one line and exit 2 (Sacred raises a KeyError
    traceback after printing its usage)."""
    if "with" not in argv:
        return
    for word in argv[argv.index("with") + 1:]:
        if word.startswith("-"):
            break
        if "=" not in word and word not in NAMED_CONFIGS and not os.path.isfile(word):
            print(f"error: {word!r}: unknown named config (valid: {', '.join(NAMED_CONFIGS)})", file=sys.stderr)
            raise SystemExit(2)


def _print_error(*args, **kwargs) -> None:
    """Sacred's printer of a failed run's exception: a fault that names itself in one line
    (a RunError, a store that could not be written, a config the run found wrong) is printed
    as that line; anything else keeps Sacred's filtered traceback."""
    error = sys.exc_info()[1]
    if isinstance(error, (RunError, StoreWriteFailed, ConfigError)):
        print(f"error: {error}", file=sys.stderr)
    else:
        _sacred_print(*args, **kwargs)


_sacred_print = sacred.experiment.print_filtered_stacktrace
sacred.experiment.print_filtered_stacktrace = _print_error


def _record_of(run) -> str:
    """Where the run's record is: its FileStorage folder, or its MongoDB id."""
    for observer in ex.observers:
        if getattr(observer, "dir", None):
            return observer.dir
    return f"run {run._id}" if run is not None and run._id is not None else "the store"


def interrupted_line(run) -> str:
    """What Ctrl-C kept of the run, and how to go on."""
    kept = f"error: interrupted (Ctrl-C): the run's record is kept as INTERRUPTED ({_record_of(run)})"
    path = (run.config.get("checkpoint_path") if run is not None else "") or ""
    if path and os.path.exists(path):
        return f"{kept}, and its last checkpoint {path!r}; run the same command again to resume from it"
    return (f"{kept}, with no checkpoint to resume from; the same command starts the run afresh "
            "(checkpoint_every=N checkpoint_path=FILE make a run resumable)")


def summary_line(run) -> str:
    """One line for a finished run in place of Sacred's whole result dict, which its record holds."""
    result = run.result if isinstance(run.result, dict) else {}
    ret = result.get("final_holdout_return")
    parts = [f"{result.get('env_steps', 0):,} env steps", f"{result.get('env_steps_per_sec', float('nan')):,.0f} "
             f"env steps/s over the whole run"]
    if isinstance(ret, (int, float)) and ret == ret:
        parts.append(f"final holdout return {ret:.1f}")
    return f"result: {result.get('design', result.get('architecture', '?'))}, {', '.join(parts)}; the whole result is in {_record_of(run)}"


# Sacred logs the whole result dict on success (hundreds of lines), and "Aborted after ..." on Ctrl-C;
# cli() prints summary_line and interrupted_line instead.
logging.getLogger(ex.path).addFilter(lambda record: not str(record.msg).startswith(("Result: ", "Aborted after")))


def cli(argv: list[str] | None = None) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C stops it, even started with `&` from a script
    argv = list(sys.argv if argv is None else argv)
    check_named_configs(argv)
    plain_warnings()  # "warning: num_workers=16 ...", one line, not a file path and a source line
    try:
        run = ex.run_commandline(attach_observers(ex, argv))
    except KeyboardInterrupt:  # Sacred recorded the run as INTERRUPTED; its workers are stopped
        in_sweep = RUNS_AT_ONCE_ENV in os.environ  # the sweep says what it kept, in one line of its own
        print(interrupted_line(ex.current_run), file=sys.stdout if in_sweep else sys.stderr, flush=True)
        raise SystemExit(130) from None
    failure = store_failure(ex.observers)
    if failure is not None:  # the last record (completed) could not be written: the run is not stored
        print(f"error: {failure}; the run's record is not complete", file=sys.stderr)
        raise SystemExit(1)
    result = run.result if run is not None else None
    if isinstance(result, dict) and result.get("diverged_at_update") is not None:
        line = RunDiverged.describe(result["diverged_reason"], result["diverged_at_update"], result["env_steps"])
        print(f"error: {line}; recorded as diverged", file=sys.stderr)
        raise SystemExit(3)
    if isinstance(result, dict) and run.status == "COMPLETED":
        print(summary_line(run))  # on stdout: a sweep's run's log, not its terminal


if __name__ == "__main__":
    cli()
