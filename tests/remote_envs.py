"""A user env whose step blocks on something outside the process, named the user's way:
`tests.remote_envs:RemoteCartPole-v0`.

CartPole whose every step first asks a "simulator" in another process and blocks until it
answers: the simulator (a child python process on a pipe) sleeps `SIM_MS` per request, as a
remote physics engine, a socket or a device would. The stepping process spends that time blocked
in a read, not on a CPU, and nothing in the config says so (`env_step_wait_us` stays 0): this is
what `plan` has to tell from a step that works (tests/test_plan_devices.py, and the committed
study in results/reference/own_wait/). The simulator exits when its pipe closes, so a killed run
leaves no process behind.
"""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym

SIM_MS = float(os.environ.get("PDQN_REMOTE_SIM_MS", "3.0"))
_SERVER = ("import sys, time\n"
           "wait = float(sys.argv[1]) / 1e3\n"
           "while sys.stdin.buffer.read(1):\n"
           "    time.sleep(wait)\n"
           "    sys.stdout.buffer.write(b'.'); sys.stdout.buffer.flush()\n")


class RemoteCartPole(gym.Wrapper):
    def __init__(self, sim_ms: float = SIM_MS):
        super().__init__(gym.make("CartPole-v1"))
        self.sim_ms = sim_ms
        self.server: subprocess.Popen | None = None

    def _ask(self) -> None:
        if self.server is None:
            self.server = subprocess.Popen([sys.executable, "-c", _SERVER, str(self.sim_ms)], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, bufsize=0)
        self.server.stdin.write(b".")
        if not self.server.stdout.read(1):
            raise RuntimeError("the simulator process closed its pipe")

    def step(self, action):
        self._ask()  # blocks ~sim_ms on the other process, without CPU here
        return self.env.step(action)

    def close(self):
        if self.server is not None:
            self.server.stdin.close()
            self.server.wait(timeout=5)
            self.server.stdout.close()
            self.server = None
        super().close()


gym.register("RemoteCartPole-v0", entry_point=RemoteCartPole, max_episode_steps=500)
