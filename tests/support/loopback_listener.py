"""A loopback TCP listener that counts the connections it gets: proof that a refusal came before any connection."""

from __future__ import annotations

import socket
import threading


class Listener:
    """Listens on 127.0.0.1 (a free port, or `port`), counts the connections it accepts and closes each at once."""

    def __init__(self, port: int = 0) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen()
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then freed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
