"""Issue 15's attacks, replayed through the real surface: a `jarvis up` that requires tokens, the SDK's own
MCP client over HTTP, and tokens of the scope each attack had. Each test fails on the code before the fix."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.support.git_env import GIT_ENV
from tests.support.projectserver import make_project
from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

CANARY = "canary-issue15"
# hex of the canary, as the project server rendered environment bytes
CANARY_HEX = CANARY.encode().hex()


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """Auth required; credentials in Jarvis's own environment; one project root; a scaffolded debug project."""
    home = tmp_path_factory.mktemp("home")
    (home / ".cursor").mkdir()
    roots = tmp_path_factory.mktemp("projects")
    project = make_project(tmp_path_factory.mktemp("debug-project"))
    running = start_jarvis(
        tmp_path_factory.mktemp("data"),
        "--require-auth",
        env={
            "HOME": str(home),
            "JARVIS_PROJECT_ROOTS": json.dumps([str(roots)]),
            "JARVIS_DEBUG_PROJECT_DIR": str(project),
            "JIRA_API_TOKEN": CANARY,
            "AWS_SECRET_ACCESS_KEY": CANARY,
            "JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS": "1",
        },
    )
    # One CLI process for the admin token (each `jarvis token create` is a whole one); the rest over MCP.
    admin = running.create_token("admin", name="admin")
    running.tokens = {"admin": admin, **anyio.run(_mint, running, admin)}  # type: ignore[attr-defined]
    yield running
    running.stop()


async def _mint(running: RunningJarvis, admin: str) -> dict[str, str]:
    async with mcp_client(running.url("/mcp/orchestrator"), admin) as client:
        return {
            scope: result_json(await client.call_tool("token", {"action": "create", "scope": scope, "name": scope}))[
                "secret"
            ]
            for scope in ("jarvis", "read", "debug")
        }


def token(running: RunningJarvis, scope: str) -> str:
    return str(running.tokens[scope])  # type: ignore[attr-defined]


def home_of(running: RunningJarvis) -> Path:
    return Path(running.extra_env["HOME"])


def roots_of(running: RunningJarvis) -> Path:
    return Path(json.loads(running.extra_env["JARVIS_PROJECT_ROOTS"])[0])


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """The refusal's text, whether the gate answers with HTTP 403 (the SDK raises) or with an MCP error."""
    try:
        result = await client.call_tool(tool, arguments)
    except Exception as exc:  # the SDK's error for a 403 is not one fixed type
        return str(exc) or type(exc).__name__
    return error_text(result)


# --- 1. client config paths ---------------------------------------------------------------------------


async def test_jarvis_token_cannot_point_a_client_config_anywhere(attacked: RunningJarvis, tmp_path: Path) -> None:
    jarvis = token(attacked, "jarvis")
    own_config = attacked.data_dir / "config.json"
    victim = tmp_path / "victim.json"
    victim.write_text('{"keep": true}\n')
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    async with mcp_client(attacked.url(), jarvis) as client:
        for path in (str(link), str(own_config), str(tmp_path / "new.json")):
            await refused(client, "jarvis_client", {"action": "config", "name": "cursor", "path": path})
        info = result_json(await client.call_tool("jarvis_client", {"action": "config", "name": "cursor"}))
        assert info["custom"] is False
        assert info["path"] == str(home_of(attacked) / ".cursor" / "mcp.json")
    # The default path itself, made a symlink out of the home: followed no more (by a token that reaches
    # the profile, so the entry would carry a token: the one made for it is revoked with the refusal).
    reaching = attacked.create_token("jarvis", "profile:default", name="reaching")
    async with mcp_client(attacked.url(), reaching) as client:
        default = home_of(attacked) / ".cursor" / "mcp.json"
        default.symlink_to(victim)
        try:
            text = error_text(
                await client.call_tool(
                    "jarvis_client", {"action": "edit", "name": "cursor", "add": ["profile:default"]}
                )
            )
        finally:
            default.unlink()
        assert "outside the home directory" in text
    live = json.loads(attacked.cli("token", "list", "--json").stdout)
    assert not any(t["name"].startswith("client:cursor") for t in live)
    assert victim.read_text() == '{"keep": true}\n'
    assert not list(tmp_path.glob("*.bak-*"))
    assert not (tmp_path / "new.json").exists()
    assert "mcpServers" not in own_config.read_text() if own_config.exists() else True


async def test_admin_custom_paths_still_confined(attacked: RunningJarvis) -> None:
    async with mcp_client(attacked.url(), token(attacked, "admin")) as client:
        text = error_text(
            await client.call_tool(
                "jarvis_client", {"action": "config", "name": "cursor", "path": str(attacked.data_dir / "config.json")}
            )
        )
        assert "Jarvis's own data directory" in text
        text = error_text(
            await client.call_tool(
                "jarvis_client", {"action": "config", "name": "cursor", "path": str(home_of(attacked) / ".bashrc")}
            )
        )
        assert ".json" in text


async def test_settings_that_flow_into_client_configs_need_admin(attacked: RunningJarvis) -> None:
    async with mcp_client(attacked.url(), token(attacked, "jarvis")) as client:
        await refused(
            client, "jarvis_config", {"action": "set", "key": "aggregator_url", "value": "https://attacker.example"}
        )
        after = result_json(await client.call_tool("jarvis_config", {"action": "get", "key": "aggregator_url"}))
        assert after["value"] == attacked.base_url  # the URL this instance serves, unchanged
        # Other settings stay open to the surface scope.
        result_json(
            await client.call_tool("jarvis_config", {"action": "set", "key": "discovery.default_limit", "value": 7})
        )
    async with mcp_client(attacked.url(), token(attacked, "admin")) as admin:
        result_json(
            await admin.call_tool(
                "jarvis_config", {"action": "set", "key": "aggregator_url", "value": "http://127.0.0.1:8765"}
            )
        )


# --- 2. the debug token and the process environment -----------------------------------------------------


def _project_server_environ(project: Path) -> dict[bytes, bytes]:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"project_mcp_server" in argv and str(project).encode() in argv:
                raw = (entry / "environ").read_bytes()
                return dict(e.split(b"=", 1) for e in raw.split(b"\0") if b"=" in e)
        except OSError:
            continue
    raise AssertionError(f"no project server of {project} is running")


async def test_debug_token_cannot_read_the_environment(attacked: RunningJarvis) -> None:
    async with mcp_client(attacked.url("/mcp/debug"), token(attacked, "debug")) as client:
        for path in ("os.environ", "posix.environ", "os.environ._data"):
            result = await client.call_tool(
                "debug", {"tool": "project_inspect_state", "arguments": json.dumps({"path": path, "depth": 3})}
            )
            text = result.content[0].text  # type: ignore[union-attr]
            assert result.is_error, text[:300]
            assert "never reads" in text
        # Walking to the environment from elsewhere finds nothing either: the server never had it.
        deep = await client.call_tool(
            "debug", {"tool": "project_inspect_state", "arguments": json.dumps({"path": "sys.modules", "depth": 4})}
        )
        body = deep.content[0].text  # type: ignore[union-attr]
        assert CANARY not in body
        assert CANARY_HEX not in body
    environ = _project_server_environ(Path(attacked.extra_env["JARVIS_DEBUG_PROJECT_DIR"]).resolve())
    assert b"JIRA_API_TOKEN" not in environ
    assert b"AWS_SECRET_ACCESS_KEY" not in environ
    assert not [name for name, value in environ.items() if CANARY.encode() in value]


# --- 3. git on the host -----------------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


def _hostile_repo(root: Path, marker: Path) -> Path:
    repo = root / "hostile"
    repo.mkdir(parents=True)
    (repo / "app.py").write_text("print(1)\n")
    (repo / ".gitattributes").write_text("* filter=evil\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    _git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    (repo / "app.py").write_text("print(2)\n")
    return repo


async def test_read_token_diff_runs_no_filter_of_the_repository(attacked: RunningJarvis, tmp_path: Path) -> None:
    marker = tmp_path / "filter-ran"
    repo = _hostile_repo(roots_of(attacked), marker)
    async with mcp_client(attacked.url(), token(attacked, "read")) as client:
        diffed = result_json(await client.call_tool("jarvis_project", {"action": "diff", "path": str(repo)}))
        analyzed = result_json(await client.call_tool("jarvis_project", {"action": "analyze", "path": str(repo)}))
    assert diffed["files"] == ["app.py"]
    assert "+print(2)" in diffed["diff"]
    assert analyzed["is_git_repo"] is True
    assert not marker.exists()


async def test_project_paths_outside_the_roots_are_refused(attacked: RunningJarvis, tmp_path: Path) -> None:
    outside = _hostile_repo(tmp_path, tmp_path / "outside-ran")
    escape = roots_of(attacked) / "escape"
    escape.symlink_to(outside)
    async with mcp_client(attacked.url(), token(attacked, "read")) as client:
        for path in (str(outside), str(escape), f"{roots_of(attacked)}/../{outside.parent.name}/{outside.name}"):
            for action in ("diff", "analyze"):
                text = error_text(await client.call_tool("jarvis_project", {"action": action, "path": path}))
                assert "outside the allowed project roots" in text
                assert "JARVIS_PROJECT_ROOTS" in text
    assert not (tmp_path / "outside-ran").exists()


# --- 4. server secrets ---------------------------------------------------------------------------------------


async def test_server_info_never_shows_launch_secrets(attacked: RunningJarvis) -> None:
    async with mcp_client(attacked.url(), token(attacked, "admin")) as admin:
        created = result_json(
            await admin.call_tool(
                "jarvis_server",
                {
                    "action": "create",
                    "name": "secretive",
                    "type": "stdio",
                    "command": "secretive-server",
                    "env": {"API_TOKEN": CANARY, "FROM_ENV": "${JIRA_API_TOKEN}", "EMPTY": ""},
                },
            )
        )
    assert CANARY not in json.dumps(created)
    async with mcp_client(attacked.url(), token(attacked, "read")) as client:
        info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "secretive"}))
    assert info["launch"]["env"] == {"API_TOKEN": "<set>", "FROM_ENV": "${JIRA_API_TOKEN}", "EMPTY": "<empty>"}
    assert CANARY not in json.dumps(info)
