"""`jarvis client` (issue 37 items 3, 4, 1): the real CLI, run beside a running `jarvis up` in a fresh home, writes
client entries that all go through Jarvis (a server alone on its one-server profile, Jarvis's own surfaces by
name), pointed at the port that Jarvis serves, with a token scoped to them when it requires one; the profiles
they use start at once, so a client's first check finds the servers running."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.downstream import FAST_ENV, eventually
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """`jarvis up --require-auth` in a home of its own."""
    env = {"HOME": str(tmp_path_factory.mktemp("home")), **FAST_ENV}
    running = start_jarvis(tmp_path_factory.mktemp("client-cli-secured"), "--require-auth", env=env)
    yield running
    running.stop()


def home_of(running: RunningJarvis) -> Path:
    return Path(running.extra_env["HOME"])


def cursor_entries(running: RunningJarvis) -> dict[str, Any]:
    return dict(json.loads((home_of(running) / ".cursor" / "mcp.json").read_text())["mcpServers"])


async def tool_names(url: str, token: str | None = None) -> set[str]:
    async with mcp_client(url, token) as client:
        return {t.name for t in (await client.list_tools()).tools}


async def test_entries_through_jarvis_on_the_port_it_serves(hosted: RunningJarvis) -> None:
    (home_of(hosted) / ".cursor").mkdir()
    done = hosted.cli("client", "edit", "cursor", "--add", "time", "--add", "jarvis", "--add", "discovery")
    assert "added time to" in done.stdout
    entries = cursor_entries(hosted)
    assert entries == {
        "time": {"url": hosted.url("/mcp/profile/time")},
        "jarvis": {"url": hosted.url("/mcp/jarvis")},
        "jarvis-discovery": {"url": hosted.url("/mcp")},
    }
    # The server alone, under its own tool names, through Jarvis.
    assert "get_current_time" in await tool_names(entries["time"]["url"])
    assert "jarvis_client" in await tool_names(entries["jarvis"]["url"])
    assert "tool_find" in await tool_names(entries["jarvis-discovery"]["url"])

    listed = json.loads(hosted.cli("client", "list", "--json").stdout)
    cursor = next(c for c in listed if c["name"] == "cursor")
    assert [(e["name"], e["managed"]) for e in cursor["entries"]] == [
        ("time", True),
        ("jarvis", True),
        ("jarvis-discovery", True),
    ]
    removed = hosted.cli("client", "edit", "cursor", "--remove", "discovery")
    assert "removed jarvis-discovery" in removed.stdout
    assert set(cursor_entries(hosted)) == {"time", "jarvis"}


async def test_a_configured_profile_starts_without_waiting_for_a_client(hosted: RunningJarvis) -> None:
    """No client has asked for `core` yet: writing its entry starts its servers (servers.autostart_profiles)."""
    (home_of(hosted) / ".codex").mkdir(exist_ok=True)
    hosted.cli("client", "edit", "codex", "--add", "profile:core")
    async with mcp_client(hosted.url()) as admin:
        setting = await admin.call_tool("jarvis_config", {"action": "get", "key": "servers.autostart_profiles"})
        assert "core" in result_json(setting)["value"]

        async def time_running() -> bool:
            servers = result_json(await admin.call_tool("jarvis_server", {"action": "list"}))["servers"]
            return any(s["name"] == "time" and s["status"] == "running" for s in servers)

        await eventually(time_running, 60, "the time server of profile core running")


async def test_refusals_say_what_to_do(hosted: RunningJarvis) -> None:
    unknown = hosted.cli("client", "edit", "cursor", "--add", "no-such-server", check=False)
    assert unknown.returncode == 1
    assert "server 'no-such-server' is not installed" in unknown.stderr
    assert "a client entry names an installed server, profile:<name> for a profile" in unknown.stderr
    nothing = hosted.cli("client", "edit", "cursor", check=False)
    assert nothing.returncode == 2
    assert "give --add or --remove" in nothing.stderr
    assert "jarvis, debug, orchestrator" in nothing.stderr


async def test_a_jarvis_that_requires_tokens_gets_entries_with_their_own(secured: RunningJarvis) -> None:
    (home_of(secured) / ".cursor").mkdir()
    secured.cli("client", "edit", "cursor", "--add", "time")
    entry = cursor_entries(secured)["time"]
    assert entry["url"] == secured.url("/mcp/profile/time")
    token = entry["headers"]["Authorization"].removeprefix("Bearer ")
    assert "get_current_time" in await tool_names(entry["url"], token)
    tokens = json.loads(secured.cli("token", "list", "--json").stdout)
    [made] = [t for t in tokens if t["name"] == "client:cursor:time"]
    assert made["scopes"] == ["servers:time"]
