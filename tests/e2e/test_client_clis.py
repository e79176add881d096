"""The real clients check what `jarvis client edit` wrote (issue 37, done-when): in a fresh home, beside a running
Jarvis, Claude Code, Gemini CLI and OpenCode list every entry Connected on their first check (`mcp list` connects
to each server), with and without required tokens; Codex CLI's `mcp list` does not connect, so it is checked to read
every entry as enabled, at the URL and with the header Jarvis wrote.

The clients are the versions deploy/agent/Dockerfile installs, from tools/clients (scripts/bootstrap). They need no
account to list: no model is asked anything.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.agent_clients import CLIENT_BIN, mcp_list
from tests.support.stack import RunningJarvis, start_jarvis

ENTRIES = ("time", "jarvis-core", "jarvis")  # a server alone, a profile (core: time and sequential-thinking), a surface
ADD = ("--add", "time", "--add", "profile:core", "--add", "jarvis")
CONNECTED = {"claude": "✔ Connected", "gemini": "- Connected", "opencode": "connected"}


def start(tmp_path_factory: pytest.TempPathFactory, *args: str) -> RunningJarvis:
    home = tmp_path_factory.mktemp("home")
    # The clients' commands on PATH are how `jarvis client` finds them: none has made its folder yet.
    # Default settings, as a new user has them: a profile's first listing waits at most 2 s for servers starting.
    env = {"HOME": str(home), "PATH": f"{CLIENT_BIN}:{os.environ['PATH']}"}
    return start_jarvis(tmp_path_factory.mktemp("jarvis"), *args, env=env)


@pytest.fixture(scope="module")
def open_jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    running = start(tmp_path_factory)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    running = start(tmp_path_factory, "--require-auth")
    yield running
    running.stop()


def configure(running: RunningJarvis) -> tuple[Path, Path]:
    """Every client's entries through `jarvis client edit`, and a project folder trusted as Gemini's note says."""
    home = Path(running.extra_env["HOME"])
    for client in ("claude-code", "gemini", "codex", "opencode"):
        done = running.cli("client", "edit", client, *ADD)
        assert done.stdout.count("added ") == 3, done.stdout
    project = home / "project"
    project.mkdir(exist_ok=True)
    # What trusting the folder when `gemini` asks writes (the edit's note tells the user to).
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    return home, project


def assert_connected(command: str, output: str, running: RunningJarvis) -> None:
    for entry in ENTRIES:
        lines = [line for line in output.splitlines() if re.search(rf"\b{re.escape(entry)}\b", line)]
        assert any(CONNECTED[command] in line for line in lines) or (
            command == "opencode" and _opencode_connected(output, entry)
        ), f"{command}: {entry} not connected on the first check:\n{output}"
    assert running.url("/mcp/profile/time") in output


def _opencode_connected(output: str, entry: str) -> bool:
    """OpenCode prints `✓ <entry> connected` (the URL on the next line)."""
    return re.search(rf"✓ {re.escape(entry)}\s+connected", output) is not None


def codex_entries(home: Path, cwd: Path) -> dict[str, dict[str, object]]:
    listed = json.loads(mcp_list("codex", home, cwd, "--json", stdout_only=True))
    return {e["name"]: e for e in listed}


@pytest.mark.parametrize("command", ["claude", "gemini", "opencode"])
def test_every_entry_connects_on_the_first_check(open_jarvis: RunningJarvis, command: str) -> None:
    home = Path(open_jarvis.extra_env["HOME"])
    if not (home / "project").exists():
        configure(open_jarvis)
    assert_connected(command, mcp_list(command, home, home / "project"), open_jarvis)


def test_codex_reads_every_entry(open_jarvis: RunningJarvis) -> None:
    home = Path(open_jarvis.extra_env["HOME"])
    if not (home / "project").exists():
        configure(open_jarvis)
    entries = codex_entries(home, home / "project")
    assert sorted(entries) == sorted(ENTRIES)
    assert all(e["enabled"] for e in entries.values())
    assert entries["time"]["transport"]["url"] == open_jarvis.url("/mcp/profile/time")  # type: ignore[index]


def test_with_tokens_required_every_entry_carries_its_own(secured: RunningJarvis) -> None:
    home, project = configure(secured)
    for command in ("claude", "gemini", "opencode"):
        assert_connected(command, mcp_list(command, home, project), secured)
    entries = codex_entries(home, project)
    headers = entries["jarvis"]["transport"]["http_headers"]  # type: ignore[index]
    assert set(headers) == {"Authorization"}  # codex shows the header's name, its value masked
    tokens = json.loads(secured.cli("token", "list", "--json").stdout)
    assert sorted(t["name"] for t in tokens) == [f"client:{c}:core,time,jarvis" for c in sorted(CLIENTS)]


CLIENTS = ("claude-code", "codex", "gemini", "opencode")
