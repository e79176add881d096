"""A real OpenSSH server on loopback for the tunnel tests: its own config, host key and authorized_keys.

Debian's openssh-server (installed by .ci/run). It listens on 127.0.0.1 only, on a free port, allows TCP
forwarding with `GatewayPorts no` (forwarded ports stay on loopback), and lets in only the keys a test
authorizes, for the user running the tests.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.required_tool import required_tool
from tests.support.stack import free_port

SSHD = "/usr/sbin/sshd"


@dataclass
class Sshd:
    directory: Path
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"ssh://{getpass.getuser()}@127.0.0.1:{self.port}"

    @property
    def host_key(self) -> str:
        """The server's public host key, as the user would read it on the host."""
        return (self.directory / "host_ed25519.pub").read_text().strip()

    def authorize(self, line: str) -> None:
        (self.directory / "authorized_keys").write_text(line + "\n")

    def log(self) -> str:
        return (self.directory / "sshd.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def start_sshd(directory: Path) -> Sshd:
    if not Path(SSHD).exists():
        required_tool("sshd")  # fails under JARVIS_REQUIRE_ALL=1, skips otherwise
    keygen = required_tool("ssh-keygen")
    directory.mkdir(parents=True, exist_ok=True)
    host_key = directory / "host_ed25519"
    subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True)
    (directory / "authorized_keys").write_text("")
    port = free_port()
    config = directory / "sshd_config"
    config.write_text(
        "\n".join(
            [
                "ListenAddress 127.0.0.1",
                f"HostKey {host_key}",
                f"AuthorizedKeysFile {directory / 'authorized_keys'}",
                f"AllowUsers {getpass.getuser()}",
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "AllowTcpForwarding yes",
                "GatewayPorts no",
                "X11Forwarding no",
                "PermitTTY no",
                "PidFile none",
                "LogLevel VERBOSE",
                "",
            ]
        )
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    log = (directory / "sshd.log").open("wb")
    process = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config), "-p", str(port)], stdout=log, stderr=subprocess.STDOUT
    )
    sshd = Sshd(directory, port, process)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"sshd exited with {process.returncode}:\n{sshd.log()}")
        if port_open(port):
            return sshd
        time.sleep(0.05)
    sshd.stop()
    raise AssertionError(f"sshd did not listen on 127.0.0.1:{port}:\n{sshd.log()}")


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0
