"""`jarvis_share` through an OpenSSH reverse tunnel: a real `jarvis up`, a real sshd on loopback, a real MCP client.

The far side is Debian's sshd started here with its own config; the "public" URL is its forwarded port.
Everything listens on 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.support.downstream import FAST_ENV, create_server, eventually, text_of, time_server
from tests.support.required_tool import required_tool
from tests.support.sshd import Sshd, port_open, start_sshd
from tests.support.stack import RunningJarvis, error_text, free_port, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """A loopback-open Jarvis: what a tunnel must not hand to the far side."""
    running = start_jarvis(
        tmp_path_factory.mktemp("tunnel"), env={"HOME": str(tmp_path_factory.mktemp("home")), **FAST_ENV}
    )
    yield running
    running.stop()


async def _share(jarvis: RunningJarvis, **arguments: Any) -> Any:
    async with mcp_client(jarvis.url()) as admin:
        return await admin.call_tool("jarvis_share", {"action": "start", **arguments})


async def _listing(jarvis: RunningJarvis) -> list[dict[str, Any]]:
    async with mcp_client(jarvis.url()) as admin:
        shares: list[dict[str, Any]] = result_json(await admin.call_tool("jarvis_share", {"action": "list"}))["shares"]
        return shares


async def _tunnel_of(jarvis: RunningJarvis, server: str) -> dict[str, Any]:
    return next(s for s in await _listing(jarvis) if s["server"] == server)


async def test_share_through_a_reverse_tunnel(jarvis: RunningJarvis, sshd: Sshd) -> None:
    async with mcp_client(jarvis.url()) as admin:
        await create_server(admin, "tunnelled", [time_server()])
    remote_port = free_port()
    # An unknown host is never trusted on its word: the answer shows its key for the user to check.
    refused = error_text(await _share(jarvis, name="tunnelled", tunnel=sshd.url, port=remote_port))
    assert "not a trusted host" in refused
    assert f"host_key='{' '.join(sshd.host_key.split()[:2])}'" in refused
    assert await _listing(jarvis) == []  # no token was issued
    # Trusted explicitly, but Jarvis's key is not authorized there yet: the share starts, the tunnel says why not.
    started = result_json(
        await _share(jarvis, name="tunnelled", tunnel=sshd.url, port=remote_port, host_key=sshd.host_key)
    )["started"]
    assert started["state"] in ("failed", "connecting")
    refused_login = await _tunnel_of(jarvis, "tunnelled")
    assert "Permission denied" in refused_login["reason"]
    assert "authorized_keys" in refused_login["reason"]
    assert refused_login["authorize"] == started["authorize"]  # list shows what to authorize, too
    authorize = started["authorize"]
    assert authorize["public_key"].startswith("ssh-ed25519 ")
    assert (
        authorize["authorized_keys_line"] == f'restrict,port-forwarding,permitlisten="{remote_port}" '
        f"{authorize['public_key']}"
    )
    key = jarvis.data_dir / "tunnel" / "id_ed25519"
    assert key.stat().st_mode & 0o777 == 0o600
    sshd.authorize(authorize["authorized_keys_line"])
    # The supervisor retries with backoff and comes up without another call.
    up = await eventually(lambda: _state(jarvis, "tunnelled", "up"), timeout=20, what="the tunnel is up")
    public_url = f"http://127.0.0.1:{remote_port}/share/tunnelled/mcp"
    assert up["public_url"] == public_url
    assert up["tunnel"] == sshd.url

    async with mcp_client(public_url, started["token"]) as guest:
        names = {t.name for t in (await guest.list_tools()).tools}
        answer = await guest.call_tool("get_current_time", {"timezone": "UTC"})
    assert names == {"get_current_time", "convert_time"}
    assert '"timezone": "UTC"' in text_of(answer)
    assert httpx2.post(public_url, headers=_accept(), json=_ping()).status_code == 401
    # Only the share's path goes through: the loopback-open jarvis surface is not handed to the far side.
    through = f"http://127.0.0.1:{remote_port}/mcp/jarvis"
    assert httpx2.post(through, headers=_accept(), json=_tools_list()).status_code == 404
    assert httpx2.get(f"http://127.0.0.1:{remote_port}/metrics").status_code == 404

    # The ssh client dies: the supervisor brings the tunnel back.
    before = (await _tunnel_of(jarvis, "tunnelled"))["restarts"]
    _kill_ssh(remote_port)
    await eventually(lambda: _restarted(jarvis, "tunnelled", before), timeout=20, what="the tunnel came back")
    async with mcp_client(public_url, started["token"]) as guest:
        assert '"timezone": "UTC"' in text_of(await guest.call_tool("get_current_time", {"timezone": "UTC"}))

    async with mcp_client(jarvis.url()) as admin:
        stopped = result_json(await admin.call_tool("jarvis_share", {"action": "stop", "name": "tunnelled"}))
    assert stopped["tunnel_closed"] is True
    assert not port_open(remote_port)
    local = jarvis.url("/share/tunnelled/mcp")
    assert httpx2.post(
        local, headers={**_accept(), "Authorization": f"Bearer {started['token']}"}, json=_ping()
    ).status_code in (401, 403)
    assert await _listing(jarvis) == []


async def test_a_changed_host_key_fails_the_tunnel(jarvis: RunningJarvis, sshd: Sshd, tmp_path: Path) -> None:
    async with mcp_client(jarvis.url()) as admin:
        await create_server(admin, "spoofed", [time_server()])
    other = tmp_path / "other"
    subprocess.run([required_tool("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    started = result_json(
        await _share(
            jarvis, name="spoofed", tunnel=sshd.url, port=free_port(), host_key=(tmp_path / "other.pub").read_text()
        )
    )["started"]
    assert started["state"] in ("failed", "connecting")
    failed = await eventually(lambda: _state(jarvis, "spoofed", "failed"), what="the tunnel failed")
    assert "Host key verification failed" in failed["reason"]
    assert "host_key" in failed["reason"]
    async with mcp_client(jarvis.url()) as admin:
        result_json(await admin.call_tool("jarvis_share", {"action": "stop", "name": "spoofed"}))


async def test_bad_tunnels_are_refused(jarvis: RunningJarvis) -> None:
    """What lands in ssh's argv is checked: a user or host that ssh would read as an option never gets there."""
    async with mcp_client(jarvis.url()) as admin:
        await create_server(admin, "argv-check", [time_server()])
    for tunnel, says in [
        ("ssh://-oProxyCommand=x@127.0.0.1:22", "user name"),
        ("ssh://me@-oProxyCommand=x:22", "host name"),
        ("http://me@host", "OpenSSH address"),
        ("ssh://me@host:99999", "port"),
    ]:
        assert says in error_text(await _share(jarvis, name="argv-check", tunnel=tunnel)), tunnel
    assert "host_key must be" in error_text(
        await _share(jarvis, name="argv-check", tunnel="ssh://me@127.0.0.1:22", host_key="-oProxyCommand=x")
    )
    assert all(s["server"] != "argv-check" for s in await _listing(jarvis))


async def test_the_tunnel_dies_with_a_killed_jarvis(sshd: Sshd, tmp_path: Path) -> None:
    running = start_jarvis(tmp_path / "data", env={"HOME": str(tmp_path), **FAST_ENV})
    try:
        async with mcp_client(running.url()) as admin:
            await create_server(admin, "orphan-check", [time_server()])
        remote_port = free_port()
        started = result_json(
            await _share(running, name="orphan-check", tunnel=sshd.url, port=remote_port, host_key=sshd.host_key)
        )["started"]
        sshd.authorize(started["authorize"]["authorized_keys_line"])
        await eventually(lambda: _state(running, "orphan-check", "up"), timeout=20, what="the tunnel is up")
        running.process.kill()  # no shutdown hook runs
        running.process.wait(10)

        async def closed() -> bool:
            return not port_open(remote_port)

        await eventually(closed, timeout=10, what="the far port closed with Jarvis")
    finally:
        running.stop()


async def _state(jarvis: RunningJarvis, server: str, state: str) -> dict[str, Any] | None:
    tunnel = await _tunnel_of(jarvis, server)
    return tunnel if tunnel["state"] == state else None


async def _restarted(jarvis: RunningJarvis, server: str, before: int) -> bool:
    tunnel = await _tunnel_of(jarvis, server)
    return bool(tunnel["state"] == "up" and tunnel["restarts"] > before)


def _kill_ssh(remote_port: int) -> None:
    """SIGKILL the ssh client Jarvis runs for this tunnel (found by its -R argument)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"ssh") and any(a.startswith(f"{remote_port}:".encode()) for a in argv):
            os.kill(int(pid), signal.SIGKILL)
            return
    raise AssertionError(f"no ssh client forwarding port {remote_port}")


def _accept() -> dict[str, str]:
    return {"Accept": "application/json, text/event-stream"}


def _ping() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def _tools_list() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
