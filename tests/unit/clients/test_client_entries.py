"""Every entry Jarvis writes goes through Jarvis: a server by name on its one-server profile, a profile, or one of
Jarvis's own surfaces by name; never the server's own launch command (issue 37 item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jarvis.common.errors import AlreadyExists, InvalidArgument
from jarvis.registry.domain.clients import ClientManager
from tests.unit.clients.clients_support import AGGREGATOR, Install


def servers_of(path: Path, key: str = "mcpServers") -> dict[str, object]:
    return dict(json.loads(path.read_text())[key])


def test_a_server_by_name_is_reached_through_its_one_server_profile(manager: ClientManager, home: Path) -> None:
    (home / ".claude").mkdir()
    result = manager.edit("claude-code", add_servers=["time"])
    assert result.added == ["time"]
    assert servers_of(home / ".claude.json")["time"] == {"type": "http", "url": f"{AGGREGATOR}/mcp/profile/time"}
    [entry] = next(s for s in manager.list() if s.name == "claude-code").entries
    assert (entry.name, entry.kind, entry.managed) == ("time", "server", True)


def test_a_stdio_only_client_spawns_jarvis_for_a_server_and_a_surface(home: Path, data_dir: Path) -> None:
    (home / ".config" / "Claude").mkdir(parents=True)
    manager = ClientManager(data_dir, home, AGGREGATOR, platform="linux", jarvis_command="/venv/bin/jarvis")
    manager.edit("claude-desktop", add_servers=["time"], add_surfaces=["discovery"], authorization="Bearer jv_x")
    written = servers_of(home / ".config" / "Claude" / "claude_desktop_config.json")
    assert written == {
        "time": {
            "command": "/venv/bin/jarvis",
            "args": ["mcp", "--surface", "profile/time"],
            "env": {"JARVIS_TOKEN": "jv_x"},
        },
        "jarvis-discovery": {
            "command": "/venv/bin/jarvis",
            "args": ["mcp", "--surface", "discovery"],
            "env": {"JARVIS_TOKEN": "jv_x"},
        },
    }


def test_surface_entries_carry_the_header(manager: ClientManager, home: Path) -> None:
    (home / ".cursor").mkdir()
    manager.edit("cursor", add_surfaces=["jarvis", "orchestrator"], authorization="Bearer jv_y")
    assert servers_of(home / ".cursor" / "mcp.json") == {
        "jarvis": {"url": f"{AGGREGATOR}/mcp/jarvis", "headers": {"Authorization": "Bearer jv_y"}},
        "jarvis-orchestrator": {"url": f"{AGGREGATOR}/mcp/orchestrator", "headers": {"Authorization": "Bearer jv_y"}},
    }


def test_an_unknown_surface_names_the_known_ones(manager: ClientManager, home: Path) -> None:
    (home / ".cursor").mkdir()
    with pytest.raises(InvalidArgument, match="'billing' is not a Jarvis surface; surfaces: discovery, jarvis, debug"):
        manager.edit("cursor", add_surfaces=["billing"])


def test_an_entry_name_jarvis_holds_for_one_thing_is_not_reused_for_another(
    manager: ClientManager, install: Install
) -> None:
    """Profile `discovery` and the discovery surface would both be `jarvis-discovery`."""
    path = install("cursor")
    manager.edit("cursor", add_profiles=["discovery"])
    with pytest.raises(AlreadyExists, match=r"already stands for profile 'discovery'; remove that first"):
        manager.edit("cursor", add_surfaces=["discovery"])
    assert servers_of(path)["jarvis-discovery"] == {"url": f"{AGGREGATOR}/mcp/profile/discovery"}
