"""A new user's first steps, through real MCP clients against `jarvis up` on a non-default port with
tokens required: connect Claude Desktop, Cursor and Codex CLI with `jarvis_client`, then call a
default server's tool (`time`, installed by bootstrap, launched with `uvx` which is not on PATH)
through a profile using exactly what each client's config file says."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.downstream import FAST_ENV, create_profile, create_server, text_of
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

# PATH as a fresh shell has it after `scripts/bootstrap`: ~/.local/bin (where uv's uvx went) is not on it.
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"
TIME_CALL = ("time__get_current_time", {"timezone": "UTC"})


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("newuser")
    for app_dir in (".config/Claude", ".cursor", ".codex"):
        (path / app_dir).mkdir(parents=True)
    (path / ".codex" / "config.toml").write_text('# my Codex settings\nmodel = "o3"\n')
    return path


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Iterator[RunningJarvis]:
    running = start_jarvis(
        tmp_path_factory.mktemp("jarvis"), "--require-auth", env={"HOME": str(home), "PATH": BARE_PATH, **FAST_ENV}
    )
    assert running.port != 8765
    yield running
    running.stop()


async def _call_over_http(url: str, headers: dict[str, str]) -> Any:
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        from mcp.client.streamable_http import streamable_http_client

        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert TIME_CALL[0] in names
            return await client.call_tool(*TIME_CALL)


def _time_answer(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    answer: dict[str, Any] = json.loads(result.content[0].text)
    assert answer["timezone"] == "UTC"
    return answer


async def test_connect_three_clients_and_call_a_default_server_through_a_profile(
    team: RunningJarvis, home: Path
) -> None:
    admin = team.create_token("admin", name="me")
    async with mcp_client(team.url(), admin) as jarvis:
        installed = result_json(await jarvis.call_tool("jarvis_server", {"action": "list"}))
        assert any(s["name"] == "time" for s in installed["servers"])  # bootstrap's default server
        await create_profile(jarvis, "walk", "time")
        for client in ("claude-desktop", "cursor", "codex"):
            edited = result_json(
                await jarvis.call_tool("jarvis_client", {"action": "edit", "name": client, "add": ["profile:walk"]})
            )
            assert edited["added"] == ["jarvis-walk"]
            assert "jv_" not in json.dumps(edited)  # the token goes into the file, never into the answer
        clients = result_json(await jarvis.call_tool("jarvis_client", {"action": "list"}))["clients"]
    assert len(clients) >= 12

    # Cursor: the URL this instance serves (not 8765) and the header a token-requiring Jarvis needs.
    cursor = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["jarvis-walk"]
    assert cursor["url"] == team.url("/mcp/profile/walk")
    assert cursor["headers"]["Authorization"].startswith("Bearer jv_")
    _time_answer(await _call_over_http(cursor["url"], cursor["headers"]))
    # Without the header the same URL is refused: the header is what makes the entry work.
    assert httpx2.post(cursor["url"], json={}, timeout=10).status_code == 401

    # Codex CLI: TOML, the user's own settings kept, literal headers under http_headers.
    codex_text = (home / ".codex" / "config.toml").read_text()
    assert codex_text.startswith('# my Codex settings\nmodel = "o3"\n')
    codex = tomllib.loads(codex_text)["mcp_servers"]["jarvis-walk"]
    assert codex["url"] == team.url("/mcp/profile/walk")
    _time_answer(await _call_over_http(codex["url"], codex["http_headers"]))

    # Claude Desktop spawns its servers: the venv's absolute jarvis, this data dir, the profile surface.
    desktop = json.loads((home / ".config" / "Claude" / "claude_desktop_config.json").read_text())
    entry = desktop["mcpServers"]["jarvis-walk"]
    assert os.path.isabs(entry["command"])
    assert entry["args"] == ["--data-dir", str(team.data_dir), "mcp", "--surface", "profile/walk"]
    # `jarvis mcp` relays to this running `jarvis up`, which requires a token: the entry carries its own.
    assert entry["env"]["JARVIS_TOKEN"].startswith("jv_")
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={"HOME": str(home), "PATH": BARE_PATH, **entry["env"]}
    )
    async with Client(params, mode="legacy") as stdio:
        _time_answer(await stdio.call_tool(*TIME_CALL))

    # The token Jarvis wrote reaches that profile alone, not the jarvis surface.
    assert httpx2.post(team.url(), json={}, headers=cursor["headers"], timeout=10).status_code == 403

    # A share points at the same served URL, and jarvis_config says so too.
    async with mcp_client(team.url(), admin) as jarvis:
        share = result_json(await jarvis.call_tool("jarvis_share", {"action": "start", "name": "time"}))["started"]
        configured = result_json(await jarvis.call_tool("jarvis_config", {"action": "get", "key": "aggregator_url"}))
    assert share["url"] == team.url("/share/time/mcp")
    assert team.base_url in json.dumps(configured)


async def test_a_failing_servers_tool_says_why_on_the_profile(team: RunningJarvis) -> None:
    admin = team.create_token("admin", name="me2")
    async with mcp_client(team.url(), admin) as jarvis:
        await create_server(jarvis, "broken", ["no-such-launcher-xyz", "serve"])
        await create_profile(jarvis, "mixed", "time", "broken")
    async with mcp_client(team.url("/mcp/profile/mixed"), admin) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert TIME_CALL[0] in names  # the healthy server still serves
        result = await client.call_tool("broken__anything", {})
    assert result.is_error
    text = text_of(result)
    assert "server 'broken' is failing" in text
    assert "no-such-launcher-xyz" in text
    assert "unknown tool" not in text


async def test_a_non_admin_cannot_pick_the_file_nor_mint_a_token_beyond_its_scopes(
    team: RunningJarvis, home: Path, tmp_path: Path
) -> None:
    admin = team.create_token("admin", name="me3")
    async with mcp_client(team.url(), admin) as jarvis:
        await create_profile(jarvis, "secret-walk", "time")
    user = team.create_token("jarvis", name="dev")  # every non-admin action of the jarvis surface
    target = tmp_path / "mcp.json"
    async with mcp_client(team.url(), user) as jarvis:
        # Attack: write a client entry into a file of the caller's choosing.
        # The gate refuses (admin only) before any tool runs, as an MCP error the agent can read.
        chosen = await jarvis.call_tool(
            "jarvis_client", {"action": "edit", "name": "cursor", "add": ["profile:secret-walk"], "path": str(target)}
        )
        assert chosen.is_error
        assert "admin" in text_of(chosen)
        # Attack: have Jarvis mint a token for a profile this token cannot reach.
        minted = await jarvis.call_tool(
            "jarvis_client", {"action": "edit", "name": "cursor", "add": ["profile:secret-walk"]}
        )
        assert minted.is_error
        assert "profile:secret-walk" in text_of(minted)
    assert not target.exists()
    cursor = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert "jarvis-secret-walk" not in cursor
    listed = json.loads(team.cli("token", "list", "--json").stdout)
    assert not any("secret-walk" in t["name"] for t in listed)
