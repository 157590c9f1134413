"""A delay line between two network interfaces: every Ethernet frame that arrives on one is sent
out of the other `one_way_ms` later, in order, both ways. The test hosts use it to put a host
at a round trip from the others where the kernel has no netem (experiments/testbed/netns_hosts.py).

    python -m experiments.testbed.delay_line IF_A IF_B ONE_WAY_MS

It runs in a namespace of its own that holds only the two interfaces (no address, so its kernel
answers nothing): raw packet sockets read each side, a thread per direction holds the frames
until they are due and sends them on. The hosts' interfaces must not hand it frames larger than
the MTU or with their checksums left to the card (`ethtool -K ... tx off tso off gso off`): a
packet socket sends what it reads, as is. What it leaves out: no loss, no reordering, no jitter
beyond this process's own scheduling (a Python thread per direction, ~20-50 us a frame on an
idle core), and it takes CPU from the hosts, which share this machine's cores.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections import deque

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4  # a frame this socket's interface sent: our own forwarding, not to read again
FRAME = 65536


def _socket(interface: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((interface, 0))
    return sock


class Direction:
    """Frames from `source` out of `out`, each `delay_s` after it arrived."""

    def __init__(self, source: socket.socket, out: socket.socket, delay_s: float):
        self.source, self.out, self.delay_s = source, out, delay_s
        self.queue: deque[tuple[float, bytes]] = deque()
        self.due = threading.Condition()

    def receive(self) -> None:
        while True:
            frame, where = self.source.recvfrom(FRAME)
            if where[2] == PACKET_OUTGOING:
                continue
            with self.due:
                self.queue.append((time.monotonic() + self.delay_s, frame))
                if len(self.queue) == 1:  # the sender waits on an empty queue or the head frame
                    self.due.notify()

    def send(self) -> None:
        while True:
            with self.due:
                while not self.queue:
                    self.due.wait()
                due, frame = self.queue[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self.due.wait(wait)  # blocks until the head frame is due (a new frame never overtakes it)
                    continue
                self.queue.popleft()
            self.out.send(frame)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python -m experiments.testbed.delay_line IF_A IF_B ONE_WAY_MS", file=sys.stderr)
        return 2
    a, b = _socket(args[0]), _socket(args[1])
    delay_s = float(args[2]) / 1000
    threads = []
    for direction in (Direction(a, b, delay_s), Direction(b, a, delay_s)):
        threads += [threading.Thread(target=direction.receive, daemon=True),
                    threading.Thread(target=direction.send, daemon=True)]
    for thread in threads:
        thread.start()
    print(f"delay line {args[0]} <-> {args[1]}: {args[2]} ms each way", flush=True)
    threads[0].join()  # runs until killed (the hosts kill every process in its namespace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
