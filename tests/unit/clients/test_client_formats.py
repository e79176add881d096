"""Every client format against a sample in its documented syntax: detected, edited without losing
unrelated content or comments, backed up, entries in the client's own spelling, imported back."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from jarvis.registry.domain.clients import CLIENTS, ClientManager, ServerLaunch
from jarvis.registry.domain.clients.config import load_config
from jarvis.registry.domain.clients.formats import CLIENTS_BY_NAME
from tests.unit.clients.clients_support import AGGREGATOR, LINUX_CONFIGS, SAMPLES, Install

TOKEN = "Bearer jv_example"
PROFILE_URL = f"{AGGREGATOR}/mcp/profile/walk"
JARVIS = "/opt/jarvis/.venv/bin/jarvis"
DATA = "/home/dev/.jarvis"
STDIO_ARGS = ["--data-dir", DATA, "mcp", "--surface", "profile/walk"]

# The profile entry each client documents for a token-protected streamable-HTTP server.
PROFILE_ENTRIES: dict[str, dict[str, Any]] = {
    "claude-desktop": {"command": JARVIS, "args": STDIO_ARGS, "env": {"JARVIS_TOKEN": "jv_example"}},
    "claude-code": {"type": "http", "url": PROFILE_URL, "headers": {"Authorization": TOKEN}},
    "cursor": {"url": PROFILE_URL, "headers": {"Authorization": TOKEN}},
    "vscode": {"type": "http", "url": PROFILE_URL, "headers": {"Authorization": TOKEN}},
    "windsurf": {"serverUrl": PROFILE_URL, "headers": {"Authorization": TOKEN}},
    "codex": {"url": PROFILE_URL, "http_headers": {"Authorization": TOKEN}},
    "gemini": {"httpUrl": PROFILE_URL, "headers": {"Authorization": TOKEN}},
    "goose": {
        "name": "jarvis-walk",
        "type": "streamable_http",
        "uri": PROFILE_URL,
        "headers": {"Authorization": TOKEN},
        "enabled": True,
        "timeout": 300,
    },
    "continue": {
        "name": "jarvis-walk",
        "type": "streamable-http",
        "url": PROFILE_URL,
        "requestOptions": {"headers": {"Authorization": TOKEN}},
    },
    "cline": {"type": "streamableHttp", "url": PROFILE_URL, "headers": {"Authorization": TOKEN}},
    "roo-code": {"type": "streamable-http", "url": PROFILE_URL, "headers": {"Authorization": TOKEN}},
    "opencode": {"type": "remote", "url": PROFILE_URL, "headers": {"Authorization": TOKEN}, "enabled": True},
    "zed": {"url": PROFILE_URL, "headers": {"Authorization": TOKEN}},
}
# A stdio server as each client spells it.
TIME = ServerLaunch("time", "stdio", command="uvx", args=["mcp-server-time"], env={"TZ": "UTC"})
STDIO_ENTRIES: dict[str, dict[str, Any]] = {
    "goose": {
        "name": "time",
        "type": "stdio",
        "cmd": "uvx",
        "args": ["mcp-server-time"],
        "envs": {"TZ": "UTC"},
        "enabled": True,
        "timeout": 300,
    },
    "continue": {"name": "time", "command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
    "opencode": {"type": "local", "command": ["uvx", "mcp-server-time"], "environment": {"TZ": "UTC"}, "enabled": True},
    "claude-code": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
    "vscode": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
}
# The user's own servers in each sample that import must bring back.
IMPORTABLE = {
    "codex": {"github", "figma"},
    "gemini": {"github", "fetch"},
    "goose": {"github"},
    "continue": {"SQLite", "remote-docs"},
    "cline": {"weather", "remote"},
    "roo-code": {"filesystem", "remote"},
    "opencode": {"everything", "jira"},
    "zed": {"hexdocs-mcp", "spectron"},
}


@pytest.fixture
def venv_manager(home: Path, data_dir: Path) -> ClientManager:
    return ClientManager(data_dir, home, AGGREGATOR, platform="linux", jarvis_command=JARVIS, jarvis_data_dir=DATA)


def _comments(text: str) -> list[str]:
    return [m.group(0).strip() for m in re.finditer(r"(#|//)[^\n\"']*$", text, re.MULTILINE)]


def test_at_least_twelve_clients_each_with_a_sample() -> None:
    assert len(CLIENTS) >= 12
    assert set(LINUX_CONFIGS) == set(CLIENTS_BY_NAME)
    assert {"codex", "goose", "continue"} <= set(CLIENTS_BY_NAME)


@pytest.mark.parametrize("name", list(LINUX_CONFIGS))
def test_detected_from_its_sample(name: str, venv_manager: ClientManager, install: Install) -> None:
    path = install(name)
    status = next(s for s in venv_manager.list() if s.name == name)
    assert (status.detected, status.config_exists, status.error) == (True, True, None)
    assert status.config_path == str(path)
    assert status.entries, "the sample's own servers are listed"


@pytest.mark.parametrize("name", list(LINUX_CONFIGS))
def test_edit_keeps_everything_else_and_writes_the_clients_own_spelling(
    name: str, venv_manager: ClientManager, install: Install
) -> None:
    path = install(name)
    client = CLIENTS_BY_NAME[name]
    original = path.read_text()
    before = load_config(client, path)

    result = venv_manager.edit(name, add_profiles=["walk"], authorization=TOKEN)

    assert result.added == ["jarvis-walk"]
    assert result.backup_path is not None
    assert Path(result.backup_path).read_text() == original
    after = load_config(client, path)
    assert after.servers["jarvis-walk"] == PROFILE_ENTRIES[name]
    for key, value in before.root.items():  # unrelated settings untouched
        if key != client.servers_key:
            assert after.root[key] == value
    for entry, value in before.servers.items():
        assert after.servers[entry] == value
    text = path.read_text()
    for comment in _comments(original):
        assert comment in text, f"comment {comment!r} lost"
    status = next(s for s in venv_manager.list() if s.name == name)
    kinds = {e.name: (e.kind, e.managed, e.profile) for e in status.entries}
    assert kinds["jarvis-walk"] == ("profile", True, "walk")

    venv_manager.edit(name, remove_profiles=["walk"])
    assert load_config(client, path).root == before.root


@pytest.mark.parametrize("name", sorted(STDIO_ENTRIES))
def test_stdio_server_entries(name: str, venv_manager: ClientManager, install: Install) -> None:
    path = install(name)
    venv_manager.edit(name, add_servers=[TIME])
    raw = load_config(CLIENTS_BY_NAME[name], path).servers["time"]
    assert raw == STDIO_ENTRIES[name]
    assert CLIENTS_BY_NAME[name].decode("time", raw) == TIME


@pytest.mark.parametrize("name", sorted(IMPORTABLE))
def test_import_reads_the_users_servers(name: str, venv_manager: ClientManager, install: Install) -> None:
    install(name)
    found = venv_manager.import_servers(name)
    assert {s.name for s in found.servers} == IMPORTABLE[name]
    by_name = {s.name: s for s in found.servers}
    if name == "codex":
        assert by_name["figma"].headers == {"X-Figma-Region": "us-east-1"}
        assert by_name["github"].env == {"GITHUB_TOKEN": "ghp_example"}
    if name == "opencode":
        assert (by_name["everything"].command, list(by_name["everything"].args)) == (
            "npx",
            ["-y", "@modelcontextprotocol/server-everything"],
        )


@pytest.mark.parametrize("name", ["codex", "goose", "continue"])
def test_new_file_in_toml_or_yaml(name: str, venv_manager: ClientManager, home: Path) -> None:
    client = CLIENTS_BY_NAME[name]
    client.app_dir(home, "linux").mkdir(parents=True)
    venv_manager.edit(name, add_profiles=["walk"])
    path = client.config_file(home, "linux")
    assert load_config(client, path).servers["jarvis-walk"][client.shape.url_key or "url"] == PROFILE_URL
    if name == "codex":
        assert "[mcp_servers.jarvis-walk]" in path.read_text()


def test_stdio_only_client_gets_the_absolute_command_and_data_dir(
    venv_manager: ClientManager, install: Install
) -> None:
    path = install("claude-desktop")
    venv_manager.edit("claude-desktop", add_profiles=["walk"], authorization=TOKEN)
    entry = load_config(CLIENTS_BY_NAME["claude-desktop"], path).servers["jarvis-walk"]
    # Its `jarvis mcp` relays to the running `jarvis up`, which checks the token it is given.
    assert entry == {"command": JARVIS, "args": STDIO_ARGS, "env": {"JARVIS_TOKEN": "jv_example"}}


def test_edit_honours_path_for_a_vscode_workspace(venv_manager: ClientManager, tmp_path: Path) -> None:
    workspace = tmp_path / "proj" / ".vscode"
    workspace.mkdir(parents=True)
    target = workspace / "mcp.json"
    target.write_text('{\n  // workspace servers\n  "servers": {}\n}\n')
    result = venv_manager.edit("vscode", add_profiles=["walk"], path=str(target))
    assert result.config_path == str(target)
    assert "// workspace servers" in target.read_text()
    assert load_config(CLIENTS_BY_NAME["vscode"], target).servers["jarvis-walk"]["url"] == PROFILE_URL
    # the default file was not touched, and uninstall cleans the workspace file too
    assert venv_manager.remove_profile_everywhere("walk") == ["vscode"]
    assert "jarvis-walk" not in load_config(CLIENTS_BY_NAME["vscode"], target).servers


def test_edit_path_goes_through_the_path_policy(venv_manager: ClientManager, tmp_path: Path, data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    from jarvis.common.errors import InvalidArgument, PermissionDenied

    with pytest.raises(InvalidArgument):
        venv_manager.edit("codex", add_profiles=["walk"], path=str(tmp_path / "config.json"))
    with pytest.raises(PermissionDenied):
        venv_manager.edit("cursor", add_profiles=["walk"], path=str(data_dir / "mcp.json"))


def test_broken_toml_is_refused_and_left_untouched(venv_manager: ClientManager, install: Install) -> None:
    from jarvis.common.errors import FailedPrecondition

    path = install("codex")
    path.write_text("[mcp_servers\nbroken = ")
    with pytest.raises(FailedPrecondition, match="not valid TOML"):
        venv_manager.edit("codex", add_profiles=["walk"])
    assert path.read_text() == "[mcp_servers\nbroken = "


def test_samples_exist() -> None:
    for _, sample in LINUX_CONFIGS.values():
        assert (SAMPLES / sample).is_file()
