"""`python -m architectures <design> --key value ...`: run one design without Sacred (architectures/__main__.py).

The command line is tyro's reading of DQNConfig (as CleanRL's scripts read theirs): `--help` lists
every key with its type, default and docstring, from the annotations and field docstrings alone.
Sacred's spellings are accepted too (`true`, `5e4` for an integer, `[64, 64]` for a list), and
whatever tyro refuses is read the way Sacred and the API read it, so the same bad value gets the
same one line from all three (tests/test_preflight.py).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import signal
import sys
import typing
from dataclasses import dataclass

import tyro

from architectures.core.config import ConfigError, DQNConfig, field_types
from architectures.core.errors import RunError, plain_warnings


@dataclass(frozen=True)
class Command:
    """Train one design (no experiment tracking)."""

    config: tyro.conf.FlagConversionOff[tyro.conf.OmitArgPrefixes[DQNConfig]]
    dry_run: bool = False
    """Check the config, the env and this machine, then stop."""
    tensorboard: typing.Optional[str] = None
    """Write the run's curves as TensorBoard event files under this folder while it trains (watch
    with: tensorboard --logdir DIR)."""


def parse(design: str, argv: list[str]) -> Command:
    """`argv` as a Command; a refusal is the one-line ConfigError the API and Sacred give."""
    wants_help = any(arg in ("-h", "--help") for arg in argv)
    try:
        with contextlib.redirect_stderr(sys.stderr if wants_help else io.StringIO()):  # its box: ours is one line
            return tyro.cli(Command, args=normalise(argv), prog=f"python -m architectures {design}",
                            use_underscores=True, console_outputs=wants_help)
    except SystemExit as exit_:
        if wants_help or exit_.code == 0:
            raise
        raise ConfigError(refusal(argv)) from None


def parse_config(argv: list[str]) -> DQNConfig:
    """The config `argv` sets (the flags of a run aside)."""
    return parse("single_env", argv).config


def pairs(argv: list[str]) -> list[tuple[str, list[str]]]:
    """`--key value ...` and `--key=value` as (key, values), in order; a token before any key is
    kept under the key "" (tyro refuses it)."""
    out: list[tuple[str, list[str]]] = []
    for arg in argv:
        if arg.startswith("--"):
            key, eq, value = arg[2:].partition("=")
            out.append((key.replace("-", "_"), [value] if eq else []))
        elif out:
            out[-1][1].append(arg)
        else:
            out.append(("", [arg]))
    return out


def normalise(argv: list[str]) -> list[str]:
    """Sacred's spellings as tyro reads values: `true`/`false` any case, a whole float for an int
    (`5e4`), a bracketed list (`[64, 64]`) as its items; flags of the run (--dry-run) unchanged."""
    types = field_types()
    out: list[str] = []
    for key, values in pairs(argv):
        if key in ("dry_run", "help", "h") or key not in types:
            out += ([f"--{key}"] if key else []) + values
            continue
        out.append(f"--{key}")
        for value in values:
            out += _spelled(types[key], value)
    return out


def _spelled(annotation, value: str) -> list[str]:
    """One value as tyro reads `annotation`: unchanged where it cannot be read as Sacred would."""
    if annotation is bool and value.lower() in ("true", "false"):
        return [value.capitalize()]
    if annotation is int:
        try:
            number = float(value)
        except ValueError:
            return [value]
        return [str(int(number))] if number.is_integer() else [value]
    if typing.get_origin(annotation) is tuple and value.startswith("["):
        try:
            return [str(item) for item in ast.literal_eval(value)]
        except (ValueError, SyntaxError, TypeError):
            return [value]
    return [value]


def refusal(argv: list[str]) -> str:
    """Why tyro refused `argv`, in the line DQNConfig.from_dict gives for the same values (an unknown
    key, a wrong type, a value out of range), or what could not be read."""
    values = {}
    for key, raw in pairs(argv):
        if key in ("dry_run", "tensorboard"):
            continue
        if not key:
            return f"{raw[0]!r}: not a --key (python -m architectures DESIGN --help lists every key)"
        if not raw:
            return f"{key}: needs a value (--{key} VALUE)"
        values[key] = [_loose(v) for v in raw] if len(raw) > 1 else _loose(raw[0])
    DQNConfig.from_dict(values)  # raises the one line
    return "the arguments could not be read (python -m architectures DESIGN --help lists every key)"


def _loose(raw: str):
    """A value as Sacred reads `with key=value`: true/false, a Python literal, else the string."""
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return raw


def main(design: str, argv: list[str] | None = None) -> None:
    from architectures import before_run, get_train_fn, preflight
    from architectures.api import event_folder
    from architectures.core.event_files import TensorBoardReporter
    from architectures.core.metrics import PrintReporter, Reporters

    # Started with `&` from a script, a process inherits SIGINT ignored and Python leaves it so: Ctrl-C's
    # `kill -INT` to the group would be lost and the run go on (`python -m architectures` sets it first
    # thing too, before its imports; workers ignore SIGINT themselves and are stopped by the main process).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    argv = list(sys.argv[2:] if argv is None else argv)
    plain_warnings()
    try:
        command = parse(design, argv)
        cfg = command.config
        (preflight if command.dry_run else before_run)(design, cfg)  # a run also takes its checkpoint's lock
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    if command.dry_run:
        print(f"{design}: the config, the env and this machine check out (dry run: nothing trained)",
              file=sys.stderr)
        return
    curves = TensorBoardReporter(event_folder(command.tensorboard, design, cfg)) if command.tensorboard else None
    try:
        result = get_train_fn(design, cfg.backend)(cfg, Reporters(PrintReporter(), curves))
    except ConfigError as err:  # found once the run looks at its machine: shared memory, a checkpoint
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except RunError as err:  # a fault of the run that names itself: an env that raised, a worker, a NaN
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:  # every worker is stopped on the way out; nothing is tracked here
        print("error: interrupted (Ctrl-C); nothing is recorded without tracking (its checkpoint, if "
              "checkpoint_path was set, is kept: the same command resumes from it)", file=sys.stderr)
        sys.exit(130)
    finally:
        if curves is not None:
            curves.close()
    json.dump(result, sys.stdout, indent=1)
    print()
