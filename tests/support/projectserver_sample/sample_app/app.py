"""The application's main loop, run by the project server in a thread: CPU, memory and network work."""

from __future__ import annotations

import collections
import socket
import time

ALLOCATIONS: collections.deque[bytes] = collections.deque(maxlen=50_000)


def busy_work(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def allocate() -> None:
    ALLOCATIONS.append(bytes(256))


def run() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    sender = socket.create_connection(listener.getsockname())
    receiver, _ = listener.accept()
    while True:
        busy_work(50_000)
        allocate()
        sender.sendall(b"x" * 512)
        receiver.recv(65536)
        time.sleep(0.001)
