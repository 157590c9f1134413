"""Ray plumbing for the Ray backend and for sweeps on Ray: connecting, and turning Ray's failures
into one-line errors that name the actor.

Ray is an optional extra: nothing here imports it at module load, so a missing Ray is a
one-line ConfigError (`import_ray`) rather than an ImportError.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np

from architectures.core.config import ConfigError
from architectures.core.errors import RunError
from architectures.transport.workers import WorkerFailed

INSTALL_HINT = "pip install -e '.[ray]' (or ./setup.sh)"


def import_ray():
    """Ray, or a one-line ConfigError saying how to install it (it is an optional extra)."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"backend: 'ray' needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def check_ray_address(address: str) -> None:
    """Raise a one-line ConfigError if `address` (host:port or ray://host:port) cannot be reached;
    `auto` and empty (start a local instance) are left to ray.init."""
    if address in ("", "auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"ray_address: expected 'auto', 'HOST:PORT' or 'ray://HOST:PORT' (got {address!r})")
    try:
        socket.create_connection((host, int(port)), timeout=3.0).close()
    except OSError as err:
        raise ConfigError(f"ray_address: no Ray cluster reachable at {address!r}: {err.strerror or err}") from None


JOIN_PROBE = "import sys, ray\nray.init(address=sys.argv[1], logging_level='ERROR')\nray.shutdown()\n"
"""Joins the cluster as a driver would and leaves: run in a process of its own, so the check
leaves no connection behind in the caller."""


def check_ray_joinable(address: str, timeout_s: float = 90.0) -> None:
    """Raise a one-line ConfigError, with Ray's own cause, if this driver cannot join the cluster
    at `address` (HOST:PORT): a reachable port is not enough where the cluster wants a token this
    machine lacks or has wrong, which Ray reports only as warnings beside a plain ConnectionError
    after ~20 s of retries. Checked in a process of its own (~1 s when it joins), read as it
    writes: the first refusal ends the probe, so a wrong token is said in seconds, not after
    Ray's retries."""
    check_ray_address(address)
    if address in ("", "auto", "local") or address.startswith("ray://"):
        return
    probe = subprocess.Popen([sys.executable, "-c", JOIN_PROBE, address], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    late = threading.Event()
    timer = threading.Timer(timeout_s, lambda: (late.set(), _end(probe)))
    timer.start()
    lines, refused = [], ""
    try:
        for line in probe.stderr:  # blocks on the probe's next line; the timer ends a probe that never answers
            if line.strip():
                lines.append(line.strip())
            if "Unauthenticated" in line:
                refused = line.strip()
                break
    except BaseException:  # Ctrl-C while it waits: the probe, in a session of its own, would not hear it
        _end(probe)
        raise
    finally:
        timer.cancel()
        if refused:
            _end(probe)
        probe.stderr.close()
        probe.wait()
    if late.is_set():
        raise ConfigError(f"ray_address: no answer from the Ray cluster at {address!r} in {timeout_s:.0f} s")
    if refused:
        cause = refused.split("RPC error: ")[-1]
        raise ConfigError(f"ray_address: the Ray cluster at {address!r} refused this driver: {cause} (token "
                          f"authentication: copy the head's ~/.ray/auth_token here, or set RAY_AUTH_TOKEN; docs/ray.md)")
    if probe.returncode != 0:
        raise ConfigError(f"ray_address: cannot join the Ray cluster at {address!r}: "
                          f"{lines[-1] if lines else probe.returncode}")


def _end(probe: subprocess.Popen) -> None:
    """Kill the probe and anything it started (its own session)."""
    try:
        os.killpg(probe.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def connect(ray, address: str, num_cpus: int) -> bool:
    """Join the cluster at `address`, or start a private instance when empty (Ray's
    address="local": without it, ray.init joins a cluster `ray start` left on this machine and
    refuses num_cpus); returns whether we started the connection (and so must shut it down). An
    already connected process is reused."""
    if ray.is_initialized():
        return False
    check_ray_address(address)
    try:
        if address and address != "local":
            ray.init(address=address, logging_level="WARNING")
        else:
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, logging_level="WARNING")
    except ConnectionError as err:
        raise ConfigError(f"ray_address: no Ray cluster at {address!r}: {str(err).splitlines()[0]}") from None
    return True


def this_node() -> dict:
    """The Ray node this process runs on: its id, address and hostname (hosts cloned from one
    image share a hostname, so the hostname alone cannot tell them apart)."""
    import ray

    return {"node_id": ray.get_runtime_context().get_node_id(), "address": ray.util.get_node_ip_address(),
            "hostname": socket.gethostname()}


def wait_ready(ray, actors: list, timeout_s: float) -> list[tuple[int, dict]]:
    try:
        return ray.get([actor.ready.remote() for actor in actors], timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        raise WorkerFailed(f"actors: not all {len(actors)} Ray actors started within {timeout_s:.0f} s; each needs "
                           f"one free CPU in the cluster (ray status shows them)") from None
    except ray.exceptions.RayTaskError as err:  # RayActor.ready raises what its constructor caught
        failed = _raised(err, "actors: a Ray actor failed to start")
    except ray.exceptions.RayError as err:
        failed = WorkerFailed(f"actors: a Ray actor failed to start: {_first_line(err)}", detail=str(err))
    raise failed from failed.__cause__  # the actor's traceback as the cause, Ray's wrapper left out


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def _raised(err, who: str) -> Exception:
    """The error a Ray actor's task raised: a RunError as itself (one line, its traceback its
    detail), anything else a one-line WorkerFailed naming `who`, the traceback its detail."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, RunError):
        return cause
    said = " ".join(str(cause).split())[:300] if cause is not None else _first_line(err)
    name = type(cause).__name__ if cause is not None else type(err).__name__
    return WorkerFailed(f"{who} raised {name}" + (f": {said}" if said else ""), detail=str(err))


class ActorLost(WorkerFailed):
    """An actor whose process or node is gone, or that answers no more (hung, or cut off): what a
    replacement can make good (transport/ray_actors.py). An actor that raised is not lost: its
    error would raise again."""

    def __init__(self, message: str, index: int, detail: str | None = None):
        super().__init__(message, detail=detail)
        self.index = index


def fetch(ray, ref, index: int, row: np.ndarray):
    """ray.get, with an actor's death or exception turned into a WorkerFailed naming it."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayActorError as err:
        failed = ActorLost(f"actor {index} (Ray actor, pid {int(row['pid'])}) died after "
                           f"{int(row['env_steps']):,} env steps: {type(err).__name__}: {_first_line(err)}", index,
                           detail=str(err))
    except ray.exceptions.RayTaskError as err:
        failed = _raised(err, f"actor {index} (Ray actor, pid {int(row['pid'])})")
    except ray.exceptions.ObjectLostError as err:
        failed = ActorLost(f"actor {index} (Ray actor, pid {int(row['pid'])}): its batch was lost "
                           f"({_first_line(err)})", index, detail=str(err))
    raise failed from failed.__cause__  # the actor's traceback as the cause, Ray's wrapper left out


def check_hung(status: np.ndarray, pending: list, busy_since: np.ndarray, timeout_s: float) -> None:
    now = time.monotonic()
    for i, queue in enumerate(pending):
        if queue and now - busy_since[i] > timeout_s:
            raise ActorLost(f"actor {i} (Ray actor, pid {int(status[i]['pid'])}) returned no batch for "
                            f"{timeout_s:.0f} s at {int(status[i]['env_steps']):,} env steps: hung "
                            f"(worker_timeout_s)", i)


def kill_all(ray, actors: list, timeout_s: float = 10.0) -> None:
    """Kill the run's actors and block until Ray reports each one dead (bounded): ray.kill only
    asks, and an actor still listed after the run returns would hold its name and its CPU."""
    for actor in actors:
        ray.kill(actor, no_restart=True)
    probes = [actor.ready.remote() for actor in actors]  # a call on a killed actor fails once Ray knows
    ray.wait(probes, num_returns=len(probes), timeout=timeout_s)
