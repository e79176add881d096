"""The tunnels of this aggregator's shares: one share-only listener and one supervised `ssh -R` each.

A tunnel lives in the process that started it (the ssh client is its child): it is not shared with
other replicas and ends with the process; the share's token, kept in the registry, outlives it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp

from jarvis.aggregator.tunnel.keys import TunnelKeys
from jarvis.aggregator.tunnel.listener import ShareListener
from jarvis.aggregator.tunnel.process import SshTunnel, TunnelPlan
from jarvis.aggregator.tunnel.spec import HostKey, SshTarget, parse_host_key
from jarvis.common.errors import FailedPrecondition

UP_WAIT_SECONDS = 10.0  # how long `start` waits for the tunnel before answering with its state


@dataclass
class _Open:
    path: str
    listener: ShareListener
    ssh: SshTunnel
    authorize: dict[str, str]  # what the far side needs to let Jarvis's key in (public, so shown in list too)


class Tunnels:
    def __init__(self, directory: Path, app: ASGIApp | None = None) -> None:
        self.keys = TunnelKeys(directory)
        self.app = app  # what a tunnel's listener serves: the aggregator's app, gate included
        self._open: dict[str, _Open] = {}

    async def check_trust(self, target: SshTarget, host_key: str | None) -> None:
        """Trust `host_key` for `target`, or make sure a key was trusted before; never trust what the host says."""
        if host_key:
            self.keys.trust(target, parse_host_key(host_key))
            return
        if self.keys.trusted(target):
            return
        offered = await self.keys.scan(target)
        keys = "; ".join(f"{k.type} {k.fingerprint}" for k in offered)
        raise FailedPrecondition(
            f"{target.known_hosts_name} is not a trusted host yet. It presents {keys}. Check that fingerprint "
            f"on the host (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), then start the share again with "
            f"host_key='{_preferred(offered)}'"
        )

    async def open(self, server: str, path: str, target: SshTarget, remote_port: int) -> dict[str, Any]:
        """Serve `path` on a new loopback listener and forward the far side's port to it; its state."""
        if self.app is None:
            raise FailedPrecondition(
                "tunnels need the aggregator's HTTP listener (jarvis up or jarvis serve aggregator)"
            )
        await self.close(server)
        public_key = await self.keys.public_key()
        listener = ShareListener(self.app, path)
        await listener.start()
        ssh = SshTunnel(TunnelPlan(target, remote_port, listener.port), self.keys)
        ssh.start()
        self._open[server] = _Open(path, listener, ssh, _authorize(public_key, target, remote_port))
        await ssh.settled(UP_WAIT_SECONDS)
        return self.view(server)

    def servers(self) -> list[str]:
        return list(self._open)

    def view(self, server: str) -> dict[str, Any]:
        """The tunnel's state for `list` (`none` when the share has no tunnel on this replica)."""
        opened = self._open.get(server)
        if opened is None:
            return {"tunnel": "none"}
        ssh = opened.ssh
        target = ssh.plan.target
        view: dict[str, Any] = {
            "tunnel": str(target),
            "state": ssh.state,
            "public_url": f"http://{target.url_host}:{ssh.port}{opened.path}" if ssh.port else None,
            "port": ssh.port,
            "since": dt.datetime.fromtimestamp(ssh.since, dt.UTC),
            "restarts": ssh.restarts,
            "authorize": opened.authorize,
        }
        if ssh.reason:
            view["reason"] = ssh.reason
        if ssh.retry_at is not None and ssh.state != "up":
            view["retry_at"] = dt.datetime.fromtimestamp(ssh.retry_at, dt.UTC)
        return view

    async def close(self, server: str) -> bool:
        opened = self._open.pop(server, None)
        if opened is None:
            return False
        await opened.ssh.stop()  # the far port closes first, then the listener behind it
        await opened.listener.stop()
        return True

    async def close_all(self) -> None:
        for server in list(self._open):
            await self.close(server)


def _preferred(keys: list[HostKey]) -> HostKey:
    return next((k for k in keys if k.type == "ssh-ed25519"), keys[0])


def _authorize(public_key: str, target: SshTarget, remote_port: int) -> dict[str, str]:
    """What to put on the far side so Jarvis's key may open this tunnel and do nothing else."""
    listen = f',permitlisten="{remote_port}"' if remote_port else ""
    return {
        "public_key": public_key,
        "authorized_keys_line": f"restrict,port-forwarding{listen} {public_key}",
        "where": f"~{target.user}/.ssh/authorized_keys on {target.host}",
    }
