"""ClientManager on real sample configs: list, edit, backups, preservation, refusals, clean-up."""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from jarvis.common.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from jarvis.registry.domain.clients import ClientManager, ClientStatus, ServerLaunch
from tests.unit.clients.clients_support import AGGREGATOR, LINUX_CONFIGS, SAMPLES, Install

STDIO = ServerLaunch(
    name="kb",
    transport="stdio",
    command="uvx",
    args=["kb-mcp", "--root", "/srv/kb"],
    env={"KB_TOKEN": "kb-secret-value-123"},
)
HTTP = ServerLaunch(
    name="tickets",
    transport="streamable-http",
    url="https://tickets.example.com/mcp",
    headers={"Authorization": "Bearer tickets-secret-456"},
)


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def status(manager: ClientManager, name: str) -> ClientStatus:
    return next(s for s in manager.list() if s.name == name)


def servers_of(path: Path, key: str = "mcpServers") -> dict[str, Any]:
    from jarvis.registry.domain.clients import jsonc

    data = jsonc.parse(path.read_text(), jsonc=True).root.value
    assert isinstance(data, dict)
    result = data[key]
    assert isinstance(result, dict)
    return result


# --- list / detect ------------------------------------------------------------------------------


def test_list_empty_home_knows_every_client(manager: ClientManager, home: Path) -> None:
    statuses = manager.list()
    assert [s.name for s in statuses] == list(LINUX_CONFIGS)
    assert all(not s.detected and not s.config_exists and not s.entries and s.error is None for s in statuses)
    assert status(manager, "cursor").config_path == str(home / ".cursor" / "mcp.json")
    assert status(manager, "vscode").config_path == str(home / ".config/Code/User/mcp.json")


def test_detected_by_app_dir_or_config(manager: ClientManager, home: Path, install: Install) -> None:
    (home / ".cursor").mkdir()
    install("windsurf")
    cursor, windsurf = status(manager, "cursor"), status(manager, "windsurf")
    assert cursor.detected
    assert not cursor.config_exists
    assert windsurf.detected
    assert windsurf.config_exists
    assert [(e.name, e.kind, e.managed) for e in windsurf.entries] == [
        ("tidewave", "server", False),
        ("git", "server", False),
        ("memory", "server", False),
    ]


def test_list_classifies_jarvis_entries_written_by_hand(manager: ClientManager, home: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "mine": {"url": f"{AGGREGATOR}/mcp/profile/web"},
                    "all": {"url": f"{AGGREGATOR}/mcp"},
                    "cli": {"command": "/usr/local/bin/jarvis", "args": ["mcp", "--surface", "profile/ops"]},
                    "other": {"url": "https://elsewhere.example.com/mcp"},
                }
            }
        )
    )
    entries = status(manager, "cursor").entries
    assert [(e.name, e.kind, e.managed, e.profile) for e in entries] == [
        ("mine", "profile", False, "web"),
        ("all", "jarvis", False, None),
        ("cli", "profile", False, "ops"),
        ("other", "server", False, None),
    ]


# --- edit: add --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "key", "stdio_entry", "http_entry"),
    [
        (
            "claude-code",
            "mcpServers",
            {"type": "stdio", "command": "uvx", "args": ["kb-mcp", "--root", "/srv/kb"], "env": STDIO.env},
            {"type": "http", "url": HTTP.url, "headers": HTTP.headers},
        ),
        (
            "cursor",
            "mcpServers",
            {"command": "uvx", "args": ["kb-mcp", "--root", "/srv/kb"], "env": STDIO.env},
            {"url": HTTP.url, "headers": HTTP.headers},
        ),
        (
            "vscode",
            "servers",
            {"type": "stdio", "command": "uvx", "args": ["kb-mcp", "--root", "/srv/kb"], "env": STDIO.env},
            {"type": "http", "url": HTTP.url, "headers": HTTP.headers},
        ),
        (
            "windsurf",
            "mcpServers",
            {"command": "uvx", "args": ["kb-mcp", "--root", "/srv/kb"], "env": STDIO.env},
            {"serverUrl": HTTP.url, "headers": HTTP.headers},
        ),
    ],
)
def test_add_stdio_and_http_server(
    manager: ClientManager,
    install: Install,
    client: str,
    key: str,
    stdio_entry: dict[str, Any],
    http_entry: dict[str, Any],
) -> None:
    path = install(client)
    before = list(servers_of(path, key))
    result = manager.edit(client, add_servers=[STDIO, HTTP], remove_servers=[], add_profiles=[], remove_profiles=[])
    assert (result.client, result.added, result.removed) == (client, ["kb", "tickets"], [])
    servers = servers_of(path, key)
    assert list(servers) == [*before, "kb", "tickets"]
    assert servers["kb"] == stdio_entry
    assert servers["tickets"] == http_entry
    entries = {e.name: e for e in status(manager, client).entries}
    assert entries["kb"].managed
    assert entries["kb"].kind == "server"
    assert entries["tickets"].managed
    assert not any(e.managed for name, e in entries.items() if name in before)


def test_claude_desktop_stdio_only(manager: ClientManager, install: Install) -> None:
    path = install("claude-desktop")
    manager.edit("claude-desktop", [STDIO], [], [], [])
    assert servers_of(path)["kb"] == {"command": "uvx", "args": ["kb-mcp", "--root", "/srv/kb"], "env": STDIO.env}
    before = path.read_bytes()
    with pytest.raises(InvalidArgument, match="supports only stdio servers; 'tickets'"):
        manager.edit("claude-desktop", [HTTP], [], [], [])
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("client", "key", "entry"),
    [
        ("claude-desktop", "mcpServers", {"command": "jarvis", "args": ["mcp", "--surface", "profile/dev"]}),
        ("claude-code", "mcpServers", {"type": "http", "url": f"{AGGREGATOR}/mcp/profile/dev"}),
        ("cursor", "mcpServers", {"url": f"{AGGREGATOR}/mcp/profile/dev"}),
        ("vscode", "servers", {"type": "http", "url": f"{AGGREGATOR}/mcp/profile/dev"}),
        ("windsurf", "mcpServers", {"serverUrl": f"{AGGREGATOR}/mcp/profile/dev"}),
    ],
)
def test_add_profile_per_client_format(
    manager: ClientManager, install: Install, client: str, key: str, entry: dict[str, Any]
) -> None:
    path = install(client)
    result = manager.edit(client, add_servers=[], remove_servers=[], add_profiles=["dev"], remove_profiles=[])
    assert result.added == ["jarvis-dev"]
    assert servers_of(path, key)["jarvis-dev"] == entry
    listed = {e.name: e for e in status(manager, client).entries}["jarvis-dev"]
    assert (listed.kind, listed.managed, listed.profile) == ("profile", True, "dev")


def test_profile_name_is_url_quoted(manager: ClientManager, install: Install) -> None:
    path = install("cursor")
    manager.edit("cursor", [], [], ["team a"], [])
    assert servers_of(path)["jarvis-team a"] == {"url": f"{AGGREGATOR}/mcp/profile/team%20a"}
    assert {e.name: e.profile for e in status(manager, "cursor").entries}["jarvis-team a"] == "team a"


def test_re_adding_a_managed_server_replaces_it_in_place(manager: ClientManager, install: Install) -> None:
    path = install("cursor")
    manager.edit("cursor", [STDIO, HTTP], [], [], [])
    changed = ServerLaunch(name="kb", command="kb-server", args=["--fast"])
    manager.edit("cursor", [changed], [], [], [])
    servers = servers_of(path)
    assert list(servers)[-2:] == ["kb", "tickets"]
    assert servers["kb"] == {"command": "kb-server", "args": ["--fast"]}


def test_new_config_created_when_app_installed(manager: ClientManager, home: Path) -> None:
    (home / ".config" / "Code").mkdir(parents=True)  # VS Code installed, never had an mcp.json
    result = manager.edit("vscode", [STDIO], [], [], [])
    path = home / ".config/Code/User/mcp.json"
    assert result.backup_path is None
    assert result.config_path == str(path)
    assert load(path) == {"servers": {"kb": {"type": "stdio", **servers_of(path, "servers")["kb"]}}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds secrets


def test_refuses_to_create_config_for_missing_app(manager: ClientManager, home: Path) -> None:
    with pytest.raises(FailedPrecondition, match=r"Cursor does not seem to be installed .*--path <file>"):
        manager.edit("cursor", [STDIO], [], [], [])
    assert not (home / ".cursor").exists()


# --- edit: remove, refusals ---------------------------------------------------------------------


def test_remove_server_and_profile(manager: ClientManager, install: Install, data_dir: Path) -> None:
    path = install("windsurf")
    manager.edit("windsurf", [STDIO], [], ["dev"], [])
    result = manager.edit("windsurf", [], ["kb"], [], ["dev"])
    assert result.removed == ["kb", "jarvis-dev"]
    assert path.read_bytes() == (SAMPLES / "windsurf_mcp_config.json").read_bytes()
    assert load(data_dir / "clients.json") == {"version": 1, "clients": {}}


def test_remove_missing_names_it_and_lists_entries(manager: ClientManager, install: Install) -> None:
    install("cursor")
    with pytest.raises(NotFound, match=r"no server 'nope'; entries there: context7, playwright, local-tool"):
        manager.edit("cursor", [], ["nope"], [], [])
    with pytest.raises(NotFound, match=r"no profile 'dev' \(entry 'jarvis-dev'\)"):
        manager.edit("cursor", [], [], [], ["dev"])


def test_removing_users_own_entry_is_refused(manager: ClientManager, install: Install) -> None:
    path = install("claude-code")
    before = path.read_bytes()
    with pytest.raises(FailedPrecondition, match=r"'github' .* was not added by Jarvis"):
        manager.edit("claude-code", [], ["github"], [], [])
    with pytest.raises(AlreadyExists, match="already has its own entry 'github'"):
        manager.edit("claude-code", [ServerLaunch(name="github", command="gh-mcp")], [], [], [])
    assert path.read_bytes() == before
    assert list(path.parent.glob(".claude.json.bak-*")) == []


def test_one_bad_request_changes_nothing(manager: ClientManager, install: Install) -> None:
    path = install("cursor")
    before = path.read_bytes()
    with pytest.raises(NotFound):
        manager.edit("cursor", [STDIO], ["missing"], [], [])
    assert path.read_bytes() == before
    assert not status(manager, "cursor").entries[-1].managed


@pytest.mark.parametrize("bad", ["a/b", "..", "x\\y", "tab\there", "nl\n", "", " padded"])
def test_entry_names_are_validated(manager: ClientManager, install: Install, bad: str) -> None:
    install("cursor")
    with pytest.raises(InvalidArgument, match="name"):
        manager.edit("cursor", [ServerLaunch(name=bad, command="x")], [], [], [])
    with pytest.raises(InvalidArgument, match="name"):
        manager.edit("cursor", [], [], [bad], [])


def test_invalid_requests(manager: ClientManager, install: Install) -> None:
    install("cursor")
    with pytest.raises(NotFound, match="unknown client 'emacs'; known clients: claude-desktop, claude-code, cursor"):
        manager.edit("emacs", [STDIO], [], [], [])
    with pytest.raises(InvalidArgument, match="nothing to change"):
        manager.edit("cursor", [], [], [], [])
    with pytest.raises(InvalidArgument, match="needs a command"):
        manager.edit("cursor", [ServerLaunch(name="x")], [], [], [])
    with pytest.raises(InvalidArgument, match="http\\(s\\) URL"):
        manager.edit("cursor", [ServerLaunch(name="x", transport="streamable-http", url="file:///etc")], [], [], [])
    with pytest.raises(InvalidArgument, match="added twice"):
        manager.edit("cursor", [ServerLaunch(name="jarvis-dev", command="x")], [], ["dev"], [])


# --- corrupt files ------------------------------------------------------------------------------


def test_corrupt_config_reported_by_list_and_refused_by_edit(manager: ClientManager, install: Install) -> None:
    path = install("cursor", "corrupt.json")
    before = path.read_bytes()
    cursor = status(manager, "cursor")
    assert cursor.config_exists
    assert cursor.entries == []
    assert cursor.error is not None
    assert str(path) in cursor.error
    assert "line 6" in cursor.error
    assert all(s.error is None for s in manager.list() if s.name != "cursor")
    with pytest.raises(FailedPrecondition, match=r"cannot edit Cursor: .* is not valid JSON.*left it untouched"):
        manager.edit("cursor", [STDIO], [], [], [])
    with pytest.raises(FailedPrecondition, match="cannot import from Cursor"):
        manager.import_servers("cursor")
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["mcp.json"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "top level is not a JSON object"),
        ('{"mcpServers": []}', '"mcpServers" is not a JSON object'),
        ('{"mcpServers": {}} // note', "comments are not allowed"),
    ],
)
def test_badly_shaped_configs(manager: ClientManager, home: Path, content: str, message: str) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(content)
    assert message in (status(manager, "cursor").error or "")
    with pytest.raises(FailedPrecondition, match=message):
        manager.edit("cursor", [STDIO], [], [], [])
    assert path.read_text() == content


def test_empty_config_file_is_an_empty_config(manager: ClientManager, home: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text("")
    assert status(manager, "cursor").error is None
    manager.edit("cursor", [], [], ["dev"], [])
    assert load(path) == {"mcpServers": {"jarvis-dev": {"url": f"{AGGREGATOR}/mcp/profile/dev"}}}


# --- preservation, backups, permissions ---------------------------------------------------------


def test_claude_json_unrelated_state_survives(manager: ClientManager, install: Install) -> None:
    path = install("claude-code")
    original_text = path.read_text()
    original = json.loads(original_text)
    manager.edit("claude-code", [STDIO, HTTP], [], ["dev"], [])
    after = load(path)
    assert list(after) == list(original)  # key order
    assert {k: v for k, v in after.items() if k != "mcpServers"} == {
        k: v for k, v in original.items() if k != "mcpServers"
    }
    assert list(after["mcpServers"]) == ["github", "sentry", "old-sse", "kb", "tickets", "jarvis-dev"]
    # Everything up to the last original entry is byte-identical, and so is the tail.
    cut = original_text.index('"old-sse"')
    assert path.read_text()[:cut] == original_text[:cut]
    tail = original_text[original_text.index('  "isQualifiedForDataSharing"') :]
    assert path.read_text().endswith(tail)
    manager.edit("claude-code", [], ["kb", "tickets"], [], ["dev"])
    assert path.read_text() == original_text


def test_vscode_comments_survive_and_round_trip(manager: ClientManager, install: Install) -> None:
    path = install("vscode")
    original = path.read_text()
    manager.edit("vscode", [STDIO], [], ["dev"], [])
    text = path.read_text()
    for comment in ("// MCP servers for every workspace", "/* Perplexity needs", "// pinned in uv's cache"):
        assert comment in text
    assert '"inputs": [' in text
    assert '"password": true,' in text
    manager.edit("vscode", [], ["kb"], [], ["dev"])
    assert path.read_text() == original


def test_backup_created_and_restorable(manager: ClientManager, install: Install) -> None:
    path = install("claude-desktop")
    original = path.read_bytes()
    result = manager.edit("claude-desktop", [], [], ["dev"], [])
    assert result.backup_path is not None
    backup = Path(result.backup_path)
    assert backup.parent == path.parent
    assert backup.name.startswith("claude_desktop_config.json.bak-")
    assert backup.name.endswith("Z")
    assert backup.read_bytes() == original
    shutil.copyfile(backup, path)  # restoring is a plain copy
    assert path.read_bytes() == original
    assert "jarvis-dev" not in servers_of(path)


def test_only_five_backups_kept(manager: ClientManager, install: Install) -> None:
    path = install("cursor")
    for i in range(4):
        manager.edit("cursor", [], [], [f"p{i}"], [])
        manager.edit("cursor", [], [], [], [f"p{i}"])
    backups = sorted(path.parent.glob("mcp.json.bak-*"))
    assert len(backups) == 5
    assert path.read_bytes() == (SAMPLES / "cursor_mcp.json").read_bytes()


def test_permission_bits_kept_and_symlink_followed(manager: ClientManager, install: Install, home: Path) -> None:
    path = install("claude-code")
    dotfiles = home / "dotfiles"  # a dotfile manager's checkout: inside the home, so the link is followed
    dotfiles.mkdir()
    real = dotfiles / "claude.json"
    path.rename(real)
    path.symlink_to(real)
    os.chmod(real, 0o600)
    result = manager.edit("claude-code", [STDIO], [], [], [])
    assert path.is_symlink()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert "kb" in servers_of(real)
    assert result.backup_path is not None
    assert Path(result.backup_path).parent == dotfiles


def test_secrets_never_logged(manager: ClientManager, install: Install, caplog: pytest.LogCaptureFixture) -> None:
    install("cursor")
    with caplog.at_level(logging.DEBUG):
        manager.edit("cursor", [STDIO, HTTP], [], [], [])
        manager.edit("cursor", [], ["kb", "tickets"], [], [])
    dumped = " ".join(str(record.__dict__) for record in caplog.records)
    assert caplog.records, "edits are logged"
    for secret in ("kb-secret-value-123", "tickets-secret-456"):
        assert secret not in dumped
        assert secret not in repr(STDIO) + repr(HTTP)


# --- everywhere clean-up ------------------------------------------------------------------------


def test_remove_server_everywhere(manager: ClientManager, install: Install, data_dir: Path) -> None:
    paths = {client: install(client) for client in ("claude-code", "cursor", "windsurf", "vscode")}
    for client in ("claude-code", "cursor", "windsurf"):
        manager.edit(client, [STDIO], [], ["dev"], [])
    # The user's own "kb" in VS Code is not Jarvis's and must stay.
    vscode_text = paths["vscode"].read_text().replace('"fetch": {', '"kb": {')
    paths["vscode"].write_text(vscode_text)

    assert manager.remove_server_everywhere("kb") == ["claude-code", "cursor", "windsurf"]
    for client in ("claude-code", "cursor", "windsurf"):
        servers = servers_of(paths[client])
        assert "kb" not in servers
        assert "jarvis-dev" in servers
    assert paths["vscode"].read_text() == vscode_text
    assert manager.remove_server_everywhere("kb") == []

    assert manager.remove_profile_everywhere("dev") == ["claude-code", "cursor", "windsurf"]
    assert paths["cursor"].read_bytes() == (SAMPLES / "cursor_mcp.json").read_bytes()
    assert load(data_dir / "clients.json")["clients"] == {}


def test_everywhere_skips_broken_files_and_forgets_vanished_entries(
    manager: ClientManager, install: Install, data_dir: Path
) -> None:
    cursor, windsurf, desktop = install("cursor"), install("windsurf"), install("claude-desktop")
    for client in ("cursor", "windsurf", "claude-desktop"):
        manager.edit(client, [STDIO], [], [], [])
    cursor.write_text("{ broken")
    windsurf.write_text((SAMPLES / "windsurf_mcp_config.json").read_text())  # the user removed it by hand
    assert manager.remove_server_everywhere("kb") == ["claude-desktop"]
    assert cursor.read_text() == "{ broken"
    assert "kb" not in servers_of(desktop)
    state = load(data_dir / "clients.json")["clients"]
    assert list(state) == ["cursor"]  # kept: the entry may still be there once the file is fixed


def test_unverifiable_text_edit_falls_back_to_a_full_rewrite(
    manager: ClientManager, install: Install, caplog: pytest.LogCaptureFixture
) -> None:
    """Duplicate keys defeat the minimal edit (JSON keeps the last one); the rewrite is still right."""
    path = install("cursor")
    manager.edit("cursor", [STDIO], [], [], [])
    duplicated = path.read_text().replace('"playwright": {', '"kb": {"command": "dup"},\n    "playwright": {')
    path.write_text(duplicated)
    with caplog.at_level(logging.WARNING):
        manager.edit("cursor", [], ["kb"], [], [])
    assert "did not verify" in caplog.text
    assert load(path) == json.loads((SAMPLES / "cursor_mcp.json").read_text())
    assert path.read_text().startswith('{\n  "mcpServers": {\n    "context7": {\n      "url"')
