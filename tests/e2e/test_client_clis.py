"""The real clients check what `jarvis client edit` wrote (issue 37, done-when): in a fresh home, beside a running
Jarvis, Claude Code, Gemini CLI and OpenCode list every entry Connected on their first check (`mcp list` connects
to each server), with and without required tokens; Codex CLI's `mcp list` does not connect, so it is checked to read
every entry as enabled, at the URL and with the header Jarvis wrote.

Entries written while Jarvis ran open, after a restart that requires a credential (issue 48 item 4, done-when): the
banner names them in one line with the commands that refresh them, and after those the clients show each entry
Connected or needing authentication (where Jarvis serves sign-in), never Claude Code's "Dynamic Client Registration
rejected (HTTP 404)".

The clients are the versions deploy/agent/Dockerfile installs, from tools/clients (scripts/bootstrap). They need no
account to list: no model is asked anything.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.agent_clients import CLIENT_BIN, mcp_list
from tests.support.stack import RunningJarvis, free_port, start_jarvis

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


# Sign-in configured: Jarvis serves its authorization server; the provider is never reached by a client's `mcp list`.
SIGN_IN = {"JARVIS_OIDC_CLIENT_ID": "jarvis", "JARVIS_OIDC_CLIENT_SECRET": "unused"}
# How each lists an entry that needs its person to sign in (`{}`: the entry's name).
NEEDS_AUTHENTICATION = {
    "claude": r"^{}: http\S+ \(HTTP\) - ! Needs authentication$",
    "opencode": r"⚠ {} needs authentication$",
}
REFRESH = "refresh them: "


def restart(running: RunningJarvis, *args: str, env: dict[str, str] | None = None) -> RunningJarvis:
    """The same Jarvis (data dir, home, port: the URL the entries name) started again with `args`."""
    running.stop()
    restarted = start_jarvis(running.data_dir, *args, env={**running.extra_env, **(env or {})}, port=running.port)
    deadline = time.monotonic() + 30
    while "Stop with Ctrl-C." not in restarted.log():  # /healthz may answer just before the banner is printed
        assert time.monotonic() < deadline, restarted.log()
        time.sleep(0.1)
    return restarted


def refresh_commands(running: RunningJarvis) -> list[list[str]]:
    """The commands the banner's one line names (none without that line), each as a shell would split it."""
    lines = [line for line in running.log().splitlines() if REFRESH in line]
    assert len(lines) <= 1, running.log()
    return [shlex.split(command) for line in lines for command in line.split(REFRESH, 1)[1].split("; ")]


def run_as_printed(running: RunningJarvis, words: list[str]) -> None:
    env = {**os.environ, "JARVIS_LOG_LEVEL": "WARNING", **running.extra_env}
    done = subprocess.run(words, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{words}: {done.stdout}{done.stderr}"
    assert done.stdout.count("added ") == len(ENTRIES), done.stdout


def test_entries_written_open_are_named_after_a_restart_with_tokens_and_connect_once_refreshed(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    running = start(tmp_path_factory)
    home, project = configure(running)  # Jarvis runs open: no entry carries a token
    assert refresh_commands(running) == []
    running = restart(running, "--require-auth")
    try:
        commands = refresh_commands(running)
        assert [words[words.index("edit") + 1 :] for words in commands] == [
            [client, *ADD] for client in sorted(CLIENTS)
        ]
        for words in commands:
            run_as_printed(running, words)
        for command in ("claude", "gemini", "opencode"):
            output = mcp_list(command, home, project)
            assert not re.search(r"\b404\b", output), output  # an HTTP 404, not a port ending in 404
            assert_connected(command, output, running)
        running = restart(running, "--require-auth")
        assert refresh_commands(running) == []  # every entry carries its token now
    finally:
        running.stop()


def test_with_sign_in_only_clients_that_cannot_sign_in_are_named_and_the_others_need_authentication(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    running = start(tmp_path_factory)
    home, project = configure(running)
    issuer = {**SIGN_IN, "JARVIS_OIDC_ISSUER": f"http://127.0.0.1:{free_port()}"}
    running = restart(running, "--require-auth", env=issuer)
    try:
        # Gemini CLI alone: Claude Code, OpenCode and Codex sign in to a Jarvis that serves sign-in.
        [words] = refresh_commands(running)
        assert words[words.index("edit") + 1 :] == ["gemini", *ADD]
        for client in sorted(CLIENTS):  # what `jarvis client edit` writes for each, as a person runs it
            done = running.cli("client", "edit", client, *ADD)
            assert done.stdout.count("added ") == len(ENTRIES), done.stdout
            signs_in = client != "gemini"
            assert ("these entries carry no token" in done.stderr) is signs_in, done.stderr
        claude = json.loads((home / ".claude.json").read_text())["mcpServers"]
        assert all("headers" not in claude[entry] for entry in ENTRIES)
        for command in ("claude", "opencode"):
            output = mcp_list(command, home, project)
            assert not re.search(r"\b404\b", output), output  # an HTTP 404, not a port ending in 404
            for entry in ENTRIES:
                assert re.search(NEEDS_AUTHENTICATION[command].format(re.escape(entry)), output, re.MULTILINE), output
        assert_connected("gemini", mcp_list("gemini", home, project), running)
        assert {e["auth_status"] for e in codex_entries(home, project).values()} == {"not_logged_in"}
        running = restart(running, "--require-auth", env=issuer)
        assert refresh_commands(running) == []
    finally:
        running.stop()
