"""Jarvis's own tunnel key and the host keys it trusts, both in `<data dir>/tunnel/`.

The key is Jarvis's alone (never the user's `~/.ssh`), so authorizing it on a far host grants a
tunnel and nothing the user's own key reaches; it is generated once, ed25519, mode 0600. The
known_hosts file holds only keys a user gave or accepted explicitly: nothing is trusted on first use.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from jarvis.aggregator.tunnel.spec import HostKey, SshTarget, parse_host_key
from jarvis.common.errors import FailedPrecondition, InvalidArgument, Unavailable

KEY_NAME = "id_ed25519"
KNOWN_HOSTS = "known_hosts"
_SCAN_SECONDS = 10.0


def openssh_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise FailedPrecondition(
            f"tunnels need the OpenSSH client ({name} is not on PATH): install it "
            "(Debian: apt-get install openssh-client) or use tunnel=none"
        )
    return found


class TunnelKeys:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @property
    def private_key(self) -> Path:
        return self.directory / KEY_NAME

    @property
    def known_hosts(self) -> Path:
        return self.directory / KNOWN_HOSTS

    async def public_key(self) -> str:
        """Jarvis's tunnel public key (generated on first use), the line to put in the far side's authorized_keys."""
        if not self.private_key.exists():
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            process = await asyncio.create_subprocess_exec(
                openssh_tool("ssh-keygen"),
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "jarvis-tunnel",
                "-f",
                str(self.private_key),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await process.communicate()
            if process.returncode != 0:
                raise FailedPrecondition(
                    f"could not generate the tunnel key in {self.directory}: {err.decode(errors='replace').strip()}"
                )
        os.chmod(self.private_key, 0o600)  # ssh refuses a key others can read
        return (await asyncio.to_thread(Path(f"{self.private_key}.pub").read_text)).strip()

    def trusted(self, target: SshTarget) -> list[HostKey]:
        """The keys trusted for `target`, as written by `trust`."""
        if not self.known_hosts.exists():
            return []
        name = target.known_hosts_name
        return [
            parse_host_key(line) for line in self.known_hosts.read_text().splitlines() if line.split(" ", 1)[0] == name
        ]

    def trust(self, target: SshTarget, key: HostKey) -> None:
        """Make `key` the one key trusted for `target` (a key given again replaces the old one)."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        name = target.known_hosts_name
        kept = [
            line
            for line in (self.known_hosts.read_text().splitlines() if self.known_hosts.exists() else [])
            if line.split(" ", 1)[0] != name
        ]
        temporary = self.known_hosts.with_suffix(".tmp")
        temporary.write_text("".join(f"{line}\n" for line in [*kept, key.line(target)]))
        os.chmod(temporary, 0o600)
        temporary.replace(self.known_hosts)

    async def scan(self, target: SshTarget) -> list[HostKey]:
        """The keys the host presents now (ssh-keyscan): shown for the user to check, never trusted as such."""
        process = await asyncio.create_subprocess_exec(
            openssh_tool("ssh-keyscan"),
            "-T",
            str(int(_SCAN_SECONDS)),
            "-p",
            str(target.port),
            "--",
            target.host,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            out, _ = await asyncio.wait_for(process.communicate(), _SCAN_SECONDS + 5)
        except TimeoutError:
            process.kill()
            await process.wait()
            out = b""
        keys = []
        for line in out.decode(errors="replace").splitlines():
            if line and not line.startswith("#"):
                try:
                    keys.append(parse_host_key(line))
                except InvalidArgument:
                    continue
        if not keys:
            raise Unavailable(
                f"{target.host} port {target.port} presented no SSH host key (is sshd running "
                "there and reachable?); pass host_key='ssh-ed25519 AAAA…' from the host's "
                "/etc/ssh/ssh_host_ed25519_key.pub to trust it without asking the host"
            )
        return keys
