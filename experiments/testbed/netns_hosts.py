"""Test hosts: a small Ray cluster of separate hosts built on this machine, for tests of what
crosses a network (tests/test_hosts.py, experiments/benches/lost_host.py).

Each host is a network namespace with one address in 198.18.0.0/24 (the benchmarking range)
on a switch of its own (a bridge in one more namespace), loopback, and no route out: nothing
reaches any other address. Its Ray node runs in its own UTS namespace too, so each host has
its own hostname, as separate machines do. Host 1 is the head with no CPUs (so actors land
on the other hosts) and runs the driver; hosts 2.. are nodes with `cpus` CPUs each. Every
node is started with an explicit --node-ip-address, usage stats off and token
authentication off (RAY_AUTH_MODE=disabled, on a network only these hosts reach), and its
Ray files in a temporary folder of its own, so no `ray_current_cluster` marker is left where
another test's ray.init would find it. Everything is stopped by process id: every process in
each namespace (`ip netns pids`), then the namespaces are deleted. Building needs root and a
kernel that allows namespaces; `Hosts.refused()` says why not, for a skip.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PORT = 6379
_BUILT = itertools.count()
ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "PYTHONWARNINGS": "ignore"}
QUICK_LOSS = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3"}
"""Read by the head's GCS when it starts; a check's own timeout stays Ray's 10 s, so a node slowed by a
busy machine is not declared dead, while a killed one refuses the check at once."""

PLACED = """
import sys, time, ray
import ray._private.state as state  # the GCS's actor table: ray.util.state needs the dashboard, left off here
ray.init(address=sys.argv[1], logging_level="ERROR")
end = time.monotonic() + 90
while time.monotonic() < end:
    alive = [a for a in state.actors().values()
             if a.get("State") == "ALIVE" and (a.get("Name") or "").startswith("pdqn_actor_")]
    if len(alive) == int(sys.argv[2]):
        print(" ".join(sorted(a["Address"]["IPAddress"] for a in alive)))
        break
    time.sleep(0.5)
"""
"""The addresses of the hosts the run's actors are on, once all are up."""


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


class Hosts:
    def __init__(self, count: int = 3, cpus: int = 2, lined: tuple[int, ...] = (), auth_token: str | None = None,
                 quick_loss: bool = False):
        """`lined`: hosts linked to the switch through a delay line (`delay`), the others directly.
        `auth_token`: the cluster uses Ray's token authentication with it (every process started
        here carries it, unless its own `env` says otherwise). `quick_loss`: the head checks each
        node every second and declares it dead after 3 failed checks (Ray's defaults: every 3 s, 5
        checks), so a lost host is known in ~3 s instead of ~15 s; for tests of what happens after a
        loss, never for a bench that measures what a loss costs (experiments/benches/lost_host.py)."""
        self.env = {**ENV, **({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": auth_token} if auth_token else {}),
                    **(QUICK_LOSS if quick_loss else {})}
        self.count, self.cpus, self.lined = count, cpus, lined
        self.lines: dict[int, subprocess.Popen | None] = {}
        self.tag = f"pdqn{os.getpid()}n{next(_BUILT)}"  # two sets of hosts in one process never collide
        self.switch = f"{self.tag}sw"
        self.names = [f"{self.tag}h{i}" for i in range(1, count + 1)]
        self.root = tempfile.mkdtemp(prefix="pdqn-hosts-", dir="/tmp")  # short: Ray's socket paths must fit
        self.nodes: list[subprocess.Popen | None] = [None] * count
        self.made: list[str] = []

    @staticmethod
    def refused() -> str | None:
        """Why test hosts cannot be built here, or None."""
        if os.geteuid() != 0:
            return "test hosts need root (ip netns add)"
        if shutil.which("ip") is None or shutil.which("unshare") is None:
            return "test hosts need iproute2's ip and util-linux's unshare"
        probe = f"pdqn{os.getpid()}probe"
        made = _ip("netns", "add", probe)
        if made.returncode != 0:
            return f"network namespaces are refused here: {made.stderr.strip()}"
        _ip("netns", "del", probe)
        return None

    def address(self, host: int) -> str:
        return f"198.18.0.{host}"

    @property
    def head(self) -> str:
        return f"{self.address(1)}:{PORT}"

    def hostname(self, host: int) -> str:
        return f"testhost{host}"

    # ------------------------------------------------------------------ the network
    def build(self) -> "Hosts":
        try:
            return self._build()
        except BaseException:
            self.close()  # nothing half-built left behind
            raise

    def _build(self) -> "Hosts":
        for name in [self.switch, *self.names]:
            self._must("netns", "add", name)
            self.made.append(name)
            self._must("-n", name, "link", "set", "lo", "up")
        self._must("-n", self.switch, "link", "add", "br0", "type", "bridge")
        self._must("-n", self.switch, "link", "set", "br0", "up")
        for host, name in enumerate(self.names, start=1):
            if host in self.lined:  # host -- eth0|linea -- delay line -- lineb|port -- switch
                line = f"{self.tag}d{host}"
                self._must("netns", "add", line)
                self.made.append(line)
                self._must("link", "add", "name", "eth0", "netns", name, "type", "veth", "peer", "name", "linea",
                           "netns", line)
                self._must("link", "add", "name", "lineb", "netns", line, "type", "veth", "peer", "name", f"port{host}",
                           "netns", self.switch)
                for end in ("linea", "lineb"):
                    self._must("-n", line, "link", "set", "dev", end, "up")
                self.delay(host, None)
            else:
                self._must("link", "add", "eth0", "netns", name, "type", "veth", "peer", "name", f"port{host}",
                           "netns", self.switch)
            self._must("-n", self.switch, "link", "set", f"port{host}", "master", "br0")
            self._must("-n", self.switch, "link", "set", f"port{host}", "up")
            self._must("-n", name, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
            self._must("-n", name, "link", "set", "eth0", "up")
        if self.lined:  # a packet socket forwards frames as read: no offloaded checksums or segments
            for name, ends in [(name, ["eth0"]) for name in self.names] + [
                    (self.switch, [f"port{h}" for h in range(1, self.count + 1)])] + [
                    (f"{self.tag}d{h}", ["linea", "lineb"]) for h in self.lined]:
                for end in ends:
                    subprocess.run(["ip", "netns", "exec", name, "ethtool", "-K", end, "tx", "off", "tso", "off",
                                    "gso", "off", "gro", "off"], capture_output=True, timeout=30, check=True)
        return self

    def delay(self, host: int, one_way_ms: float | None) -> None:
        """Put a lined host `one_way_ms` from the switch each way (experiments/testbed/delay_line.py), or,
        with None, join its line's two ends with a kernel bridge (no delay, no forwarding process)."""
        line = f"{self.tag}d{host}"
        running = self.lines.pop(host, None)
        if running is not None:
            running.kill()
            running.wait(timeout=30)
        else:
            _ip("-n", line, "link", "del", "dev", "join")  # absent the first time
        if one_way_ms is None:
            self._must("-n", line, "link", "add", "join", "type", "bridge")
            for end in ("linea", "lineb"):
                self._must("-n", line, "link", "set", "dev", end, "master", "join")
            self._must("-n", line, "link", "set", "dev", "join", "up")
            return
        self.lines[host] = subprocess.Popen(
            ["ip", "netns", "exec", line, sys.executable, "-m", "experiments.testbed.delay_line", "linea", "lineb", str(one_way_ms)],
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), stdout=subprocess.PIPE, text=True,
            start_new_session=True)
        self.lines[host].stdout.readline()  # its sockets are bound: frames from here on are forwarded

    def _must(self, *args: str) -> None:
        done = _ip(*args)
        if done.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")

    # ------------------------------------------------------------------ Ray nodes
    def start(self, host: int, wait: bool = True) -> None:
        """Start host's Ray node (the head on host 1), in its own UTS namespace."""
        ray = os.path.join(os.path.dirname(sys.executable), "ray")
        common = [f"--node-ip-address={self.address(host)}", "--disable-usage-stats", "--block",
                  f"--temp-dir={self.root}/{host}"]
        if host == 1:
            args = ["start", "--head", f"--port={PORT}", "--num-cpus=0", "--include-dashboard=false", *common]
        else:
            args = ["start", f"--address={self.head}", f"--num-cpus={self.cpus}", *common]
        script = f'hostname {self.hostname(host)} && exec "$0" "$@"'
        log = open(os.path.join(self.root, f"node{host}.log"), "w")
        self.nodes[host - 1] = subprocess.Popen(
            ["ip", "netns", "exec", self.names[host - 1], "unshare", "--uts", "sh", "-c", script, ray, *args],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **self.env}, start_new_session=True)
        log.close()
        if wait:
            self.wait_for_cpus(self.cpus * sum(1 for h in range(2, self.count + 1) if self.nodes[h - 1]))

    def wait_for_cpus(self, cpus: int, timeout_s: float = 90.0, free: bool = False) -> None:
        """Block until the cluster counts `cpus` CPUs (the nodes have joined the head), or, with
        `free`, until exactly that many are free (a dead driver's actors have gone)."""
        count = "available_resources" if free else "cluster_resources"
        probe = ("import sys, time, ray\n"
                 "end = time.monotonic() + float(sys.argv[3])\n"
                 "while True:\n"  # the head itself may still be starting
                 "    try:\n        ray.init(address=sys.argv[1], logging_level='ERROR')\n        break\n"
                 "    except ConnectionError:\n        if time.monotonic() > end: raise\n        time.sleep(0.5)\n"
                 f"while ray.{count}().get('CPU', 0) != float(sys.argv[2]) and time.monotonic() < end:\n"
                 "    time.sleep(0.5)\n"
                 f"sys.exit(0 if ray.{count}().get('CPU', 0) == float(sys.argv[2]) else 1)\n")
        done = self.run(1, [sys.executable, "-c", probe, self.head, str(cpus), str(timeout_s)],
                        timeout=timeout_s + 60)
        if done.returncode != 0:
            raise RuntimeError(f"the test cluster did not reach {cpus} CPUs: {done.stderr[-1500:]}\n"
                               + self.logs())

    def run(self, host: int, cmd: list[str], timeout: float = 300, env: dict | None = None,
            **kwargs) -> subprocess.CompletedProcess:
        """Run `cmd` on host (its network only) to its end."""
        return subprocess.run(["ip", "netns", "exec", self.names[host - 1], *cmd], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **self.env, **(env or {})}, **kwargs)

    def popen(self, host: int, cmd: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.names[host - 1], *cmd], env={**os.environ, **self.env},
                                start_new_session=True, **kwargs)

    def actor_addresses(self, count: int) -> list[str]:
        """The addresses of the hosts a run's `count` actors are on, once all are up (sorted)."""
        return self.run(1, [sys.executable, "-c", PLACED, self.head, str(count)], timeout=150).stdout.split()

    def wait_for_process(self, needle: str, hosts: tuple[int, ...], timeout_s: float = 120.0) -> tuple[int, list[str]]:
        """The first of `hosts` on which a process whose command line holds `needle` runs, and that
        command line (argv), so a test can tell which run it is."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            for host in hosts:
                for pid in self.pids(host):
                    try:
                        with open(f"/proc/{pid}/cmdline", "rb") as f:
                            cmdline = f.read()
                    except OSError:
                        continue
                    if needle.encode() in cmdline:
                        return host, [arg.decode() for arg in cmdline.split(b"\0") if arg]
            time.sleep(0.2)
        raise RuntimeError(f"no process running {needle!r} on hosts {hosts} within {timeout_s:.0f} s")

    def pids(self, host: int) -> list[int]:
        listed = _ip("netns", "pids", self.names[host - 1]).stdout.split()
        return [int(pid) for pid in listed]

    def lose(self, host: int) -> None:
        """The host is gone: every process on it killed at once (SIGKILL), as a power cut would."""
        self._kill(self.names[host - 1])

    def _kill(self, name: str) -> None:
        for _ in range(20):  # a process may fork while we kill: until the namespace is empty
            pids = [int(pid) for pid in _ip("netns", "pids", name).stdout.split()]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)

    def logs(self) -> str:
        out = []
        for host in range(1, self.count + 1):
            path = os.path.join(self.root, f"node{host}.log")
            if os.path.exists(path):
                out.append(f"--- node {host}:\n" + open(path).read()[-1500:])
        return "\n".join(out)

    def close(self) -> None:
        for name in self.made:
            self._kill(name)
        for node in [*self.nodes, *self.lines.values()]:
            if node is not None:
                node.wait(timeout=30)  # our own children: reaped, no zombie left
        for name in self.made:
            _ip("netns", "del", name)
        self.made = []
        shutil.rmtree(self.root, ignore_errors=True)
