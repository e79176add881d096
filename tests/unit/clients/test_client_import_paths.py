"""Importing a client's own servers, config paths per platform and custom paths, the state file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from jarvis.registry.domain.clients import ClientManager, ServerLaunch
from tests.unit.clients.clients_support import AGGREGATOR, Install

# --- import -------------------------------------------------------------------------------------


def test_import_claude_code_user_servers(manager: ClientManager, install: Install) -> None:
    install("claude-code")
    manager.edit("claude-code", [], [], ["dev"], [])
    result = manager.import_servers("claude-code")
    assert result.servers == [
        ServerLaunch(
            name="github",
            transport="stdio",
            command="npx",
            args=("-y", "@modelcontextprotocol/server-github"),
            env={"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_exampleexampleexample0000000000"},
        ),
        ServerLaunch(
            name="sentry",
            transport="streamable-http",
            url="https://mcp.sentry.dev/mcp",
            headers={"Authorization": "Bearer sntrys_example"},
        ),
    ]
    reasons = {s.name: s.reason for s in result.skipped}
    assert set(reasons) == {"old-sse", "jarvis-dev"}
    assert "SSE" in reasons["old-sse"]
    assert "added by Jarvis" in reasons["jarvis-dev"]
    # project-scoped servers under "projects" are not user-level servers
    assert "postgres" not in {s.name for s in result.servers}


def test_import_vscode_cursor_windsurf(manager: ClientManager, install: Install) -> None:
    install("vscode")
    install("cursor")
    install("windsurf")
    vscode = manager.import_servers("vscode")
    assert [s.name for s in vscode.servers] == ["fetch", "github"]
    assert vscode.servers[1].transport == "streamable-http"
    assert "${input:" in vscode.skipped[0].reason
    assert vscode.skipped[0].name == "perplexity"

    cursor = manager.import_servers("cursor")
    assert [(s.name, s.transport) for s in cursor.servers] == [
        ("context7", "streamable-http"),
        ("playwright", "stdio"),
    ]
    assert cursor.servers[0].headers == {"CONTEXT7_API_KEY": "ctx7-example"}
    assert [(s.name, "cwd" in s.reason) for s in cursor.skipped] == [("local-tool", True)]

    windsurf = manager.import_servers("windsurf")
    assert [(s.name, s.transport, s.url) for s in windsurf.servers] == [
        ("tidewave", "streamable-http", "http://localhost:4000/tidewave/mcp"),
        ("memory", "stdio", ""),
    ]
    assert [(s.name, "disabled" in s.reason) for s in windsurf.skipped] == [("git", True)]


def test_import_skips_hand_written_jarvis_entries_and_odd_shapes(manager: ClientManager, home: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    entries = {
        "jarvis": {"url": f"{AGGREGATOR}/mcp"},
        "not-an-object": "npx foo",
        "nothing": {"env": {}},
        "bad-args": {"command": "x", "args": "--flag"},
        "a/b": {"command": "x"},
        "ok": {"command": "x", "args": []},
    }
    path.write_text(json.dumps({"mcpServers": entries}))
    result = manager.import_servers("cursor")
    assert [s.name for s in result.servers] == ["ok"]
    assert [s.name for s in result.skipped] == ["jarvis", "not-an-object", "nothing", "bad-args", "a/b"]


def test_import_without_config_file(manager: ClientManager, home: Path) -> None:
    with pytest.raises(NotFound, match=r"Cursor has no config file at .*\.cursor/mcp\.json"):
        manager.import_servers("cursor")
    with pytest.raises(NotFound, match="unknown client"):
        manager.import_servers("emacs")


# --- paths --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "client", "relative"),
    [
        ("darwin", "claude-desktop", "Library/Application Support/Claude/claude_desktop_config.json"),
        ("win32", "claude-desktop", "AppData/Roaming/Claude/claude_desktop_config.json"),
        ("linux", "claude-desktop", ".config/Claude/claude_desktop_config.json"),
        ("darwin", "vscode", "Library/Application Support/Code/User/mcp.json"),
        ("win32", "vscode", "AppData/Roaming/Code/User/mcp.json"),
        ("linux", "vscode", ".config/Code/User/mcp.json"),
        ("darwin", "claude-code", ".claude.json"),
        ("win32", "cursor", ".cursor/mcp.json"),
        ("darwin", "windsurf", ".codeium/windsurf/mcp_config.json"),
    ],
)
def test_default_paths_per_platform(tmp_path: Path, platform: str, client: str, relative: str) -> None:
    home = tmp_path / "home"
    manager = ClientManager(tmp_path / "data", home, AGGREGATOR, platform=platform)
    info = manager.config_path(client)
    assert info.path == info.default_path == str(home / relative)
    assert not info.custom
    assert not info.exists


def test_set_custom_path_and_edit_there(manager: ClientManager, home: Path, data_dir: Path) -> None:
    (home / "cfg").mkdir()
    info = manager.config_path("cursor", "~/cfg/cursor-mcp.json")
    assert (info.path, info.custom, info.exists) == (str(home / "cfg" / "cursor-mcp.json"), True, False)
    assert info.default_path == str(home / ".cursor" / "mcp.json")
    assert manager.config_path("cursor") == info
    status = next(s for s in manager.list() if s.name == "cursor")
    assert status.custom_path
    assert status.config_path == info.path

    # A custom path lets Jarvis create the file even though ~/.cursor does not exist.
    manager.edit("cursor", [], [], ["dev"], [])
    assert json.loads((home / "cfg" / "cursor-mcp.json").read_text()) == {
        "mcpServers": {"jarvis-dev": {"url": f"{AGGREGATOR}/mcp/profile/dev"}}
    }
    state = json.loads((data_dir / "clients.json").read_text())
    assert state["clients"]["cursor"]["config_path"] == info.path

    reset = manager.config_path("cursor", "")
    assert (reset.path, reset.custom) == (reset.default_path, False)


def test_managed_entries_are_per_file(manager: ClientManager, home: Path, install: Install) -> None:
    """Pointing a client at another file must not make a user's entry there look like Jarvis's."""
    install("cursor")
    manager.edit("cursor", [ServerLaunch(name="playwright-2", command="x")], [], [], [])
    other = home / "other.json"
    other.write_text(json.dumps({"mcpServers": {"playwright-2": {"command": "mine"}}}))
    manager.config_path("cursor", str(other))
    assert [(e.name, e.managed) for e in next(s for s in manager.list() if s.name == "cursor").entries] == [
        ("playwright-2", False)
    ]
    with pytest.raises(FailedPrecondition, match="not added by Jarvis"):
        manager.edit("cursor", [], ["playwright-2"], [], [])


def test_custom_path_same_as_default_is_not_custom(manager: ClientManager, home: Path) -> None:
    (home / ".cursor").mkdir()
    assert not manager.config_path("cursor", str(home / ".cursor" / "mcp.json")).custom


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("relative/mcp.json", "must be absolute"),
        ("~bob/mcp.json", "only '~'"),
        ("~/missing/dir/mcp.json", "create the folder first"),
        ("~", "is a directory"),
        ("/tmp/a\x00b", "control characters"),
    ],
)
def test_custom_path_validation(manager: ClientManager, raw: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        manager.config_path("cursor", raw)
    assert not manager.config_path("cursor").custom


def test_a_path_whose_own_folder_is_missing_gets_it_at_the_first_write(manager: ClientManager, home: Path) -> None:
    """Issue 46: `--path <workspace>/.vscode/mcp.json` in a workspace without `.vscode/` yet was refused."""
    (home / "work").mkdir()
    result = manager.edit("vscode", add_profiles=["core"], path=str(home / "work" / ".vscode" / "mcp.json"))
    assert result.config_path == str(home / "work" / ".vscode" / "mcp.json")
    assert (home / "work" / ".vscode" / "mcp.json").exists()


def test_custom_path_whose_directory_disappeared_is_recreated(manager: ClientManager, home: Path) -> None:
    (home / "cfg").mkdir()
    manager.config_path("windsurf", "~/cfg/w.json")
    (home / "cfg").rmdir()
    manager.edit("windsurf", [], [], ["dev"], [])
    assert (home / "cfg" / "w.json").exists()


# --- state file ---------------------------------------------------------------------------------


def test_state_file_layout(manager: ClientManager, install: Install, data_dir: Path, home: Path) -> None:
    install("cursor")
    manager.edit("cursor", [ServerLaunch(name="kb", command="kb")], [], ["dev"], [])
    assert json.loads((data_dir / "clients.json").read_text()) == {
        "version": 1,
        "clients": {
            "cursor": {
                "config_path": None,
                "managed": {
                    str(home / ".cursor" / "mcp.json"): {
                        "kb": {"kind": "server", "ref": "kb"},
                        "jarvis-dev": {"kind": "profile", "ref": "dev"},
                    }
                },
            }
        },
    }
    assert sorted(p.name for p in data_dir.iterdir()) == ["clients.json", "clients.lock"]


def test_state_survives_a_new_manager(install: Install, home: Path, data_dir: Path) -> None:
    install("cursor")
    ClientManager(data_dir, home, AGGREGATOR, platform="linux").edit("cursor", [], [], ["dev"], [])
    again = ClientManager(data_dir, home, AGGREGATOR, platform="linux")
    assert again.edit("cursor", [], [], [], ["dev"]).removed == ["jarvis-dev"]


def test_unreadable_state_file_is_an_error(manager: ClientManager, data_dir: Path) -> None:
    data_dir.mkdir()
    (data_dir / "clients.json").write_text("{nope")
    with pytest.raises(FailedPrecondition, match=r"clients\.json is unreadable"):
        manager.list()


# --- path policy (issue 15: a config path must not become a write anywhere) ----------------------


def test_default_path_symlinked_out_of_home_is_never_written(
    manager: ClientManager, install: Install, tmp_path: Path
) -> None:
    path = install("cursor")
    outside = tmp_path / "outside.json"
    outside.write_text('{"keep": true}\n')
    path.unlink()
    path.symlink_to(outside)
    with pytest.raises(PermissionDenied, match="outside the home directory"):
        manager.edit("cursor", [ServerLaunch(name="kb", command="kb")], [], [], [])
    assert outside.read_text() == '{"keep": true}\n'
    assert not list(tmp_path.glob("outside.json.bak-*"))


def test_custom_path_symlinked_elsewhere_is_refused(manager: ClientManager, home: Path, tmp_path: Path) -> None:
    (home / "cfg").mkdir()
    target = tmp_path / "victim.json"
    target.write_text("{}")
    (home / "cfg" / "link.json").symlink_to(target)
    with pytest.raises(PermissionDenied, match="Jarvis does not follow symlinks out"):
        manager.config_path("cursor", "~/cfg/link.json")
    assert not manager.config_path("cursor").custom


def test_jarvis_data_dir_is_never_a_client_config(manager: ClientManager, data_dir: Path) -> None:
    data_dir.mkdir()
    (data_dir / "config.json").write_text('{"version": 2}')
    with pytest.raises(PermissionDenied, match="Jarvis's own data directory"):
        manager.config_path("cursor", str(data_dir / "config.json"))
    assert (data_dir / "config.json").read_text() == '{"version": 2}'


def test_a_custom_path_set_before_the_policy_is_checked_again_on_write(manager: ClientManager, data_dir: Path) -> None:
    data_dir.mkdir()
    (data_dir / "config.json").write_text('{"version": 2}')
    (data_dir / "clients.json").write_text(
        json.dumps({"version": 1, "clients": {"cursor": {"config_path": str(data_dir / "config.json"), "managed": {}}}})
    )
    with pytest.raises(PermissionDenied, match="Jarvis's own data directory"):
        manager.edit("cursor", [], [], ["dev"], [])
    assert (data_dir / "config.json").read_text() == '{"version": 2}'


@pytest.mark.parametrize("name", ["authorized_keys", ".bashrc", "cron.txt"])
def test_custom_path_must_be_a_file_of_the_clients_format(manager: ClientManager, home: Path, name: str) -> None:
    with pytest.raises(InvalidArgument, match=r"keeps its config in a \.json file"):
        manager.config_path("cursor", str(home / name))


def test_existing_file_of_another_kind_is_never_replaced(manager: ClientManager, home: Path) -> None:
    (home / "notes.json").write_text("not json at all\n")
    manager.config_path("cursor", "~/notes.json")
    with pytest.raises(FailedPrecondition, match="is not valid JSON"):
        manager.edit("cursor", [], [], ["dev"], [])
    assert (home / "notes.json").read_text() == "not json at all\n"
    fifo = home / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(FailedPrecondition, match="not a regular file"):
        manager.config_path("cursor", str(fifo))
