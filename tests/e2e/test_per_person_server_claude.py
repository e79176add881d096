"""Claude Code, the real CLI, configured by `jarvis client edit`, lists and calls a server each person connects to with
their own account (issue 45, done-when; decision 0063). Claude Code calls only what `tools/list` shows: before 0063 a
profile listed no tools of such a server to anyone, so for Claude Code it did not exist (run against the code before
0063, this test fails with "the model was named [] of jarvis-notes").

A Jarvis that requires tokens; the OAuth-protected `notes` server (tests/support/oauth_downstream.py) in `servers.oauth`
and in profile `notes`; `jarvis client edit claude-code --add profile:notes` writes Claude Code's entry with a token of
its own, and that token is the person whose account is used at `notes`. Claude Code runs headless (`claude -p`, its
defaults) against a scripted fake of the Anthropic Messages API (tests/support/anthropic_fake.py), which records what
Claude Code sends. Claude Code defers an MCP server's tools behind its own ToolSearch (Jarvis marks only `/mcp`'s as
always loaded): the first turn names them to the model, which loads the ones it wants with ToolSearch's `select:`, and
their definitions are then sent with every request. The fake does that, then calls a tool.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_clients import CLIENT_BIN, client_env
from tests.support.anthropic_fake import FINAL, ScriptedToolsFake
from tests.support.discovery import model_definitions
from tests.support.downstream import eventually
from tests.support.http_fake import serve_app
from tests.support.oauth_downstream import consent_in_browser
from tests.support.per_person_oauth import LINK, NOTES_ENV, notes, notes_profile
from tests.support.stack import RunningJarvis, mcp_client, start_jarvis

pytestmark = pytest.mark.anyio

__all__ = ["notes", "notes_profile"]  # fixtures, registered by being here

ENTRY = "jarvis-notes"  # the entry `jarvis client edit` names profile:notes by
PREFIX = f"mcp__{ENTRY}__"  # how Claude Code names an MCP server's tools to its model
CONNECT, WHOAMI = f"{PREFIX}notes__connect", f"{PREFIX}notes__whoami"
SEARCH = "ToolSearch"  # Claude Code's own tool search, which an MCP server's tools are deferred behind
ACCOUNT = "claude-at-notes"  # the account the token's person approves with at the notes server


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """`jarvis up --require-auth` (tokens, no sign-in) in a fresh home; Claude Code on PATH, as `jarvis client` finds
    it. A missing Claude Code fails here under JARVIS_REQUIRE_ALL=1."""
    home = tmp_path_factory.mktemp("home")
    client_env(home)
    env = {"HOME": str(home), "PATH": f"{CLIENT_BIN}:{os.environ['PATH']}", **NOTES_ENV}
    running = start_jarvis(tmp_path_factory.mktemp("jarvis"), "--require-auth", env=env)
    yield running
    running.stop()


def ask_claude(home: Path, load: list[str], call: str) -> ScriptedToolsFake:
    """`claude -p` in `home` with its own configuration (the entry `jarvis client edit` wrote) and the fake as its
    model, which loads the deferred tools `load` through Claude Code's ToolSearch, then calls `call`: the fake, with
    what Claude Code sent it."""
    fake = ScriptedToolsFake([(SEARCH, {"query": "select:" + ",".join(load)}), (call, {})])
    project = home / "project"
    project.mkdir(exist_ok=True)
    with serve_app(fake.app()) as model_url:
        env = {**client_env(home), "ANTHROPIC_API_KEY": "sk-ant-per-person-test", "ANTHROPIC_BASE_URL": model_url}
        command = ["claude", "-p", "Who am I at the notes server?", "--output-format", "json"]
        command += ["--allowedTools", f"{SEARCH},{call}"]
        done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"claude exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    named = sorted(announced(fake))
    assert json.loads(done.stdout)["result"] == FINAL, f"the model was named {named} of {ENTRY}: {done.stdout[-1000:]}"
    return fake


def announced(fake: ScriptedToolsFake) -> set[str]:
    """The entry's tools Claude Code named to its model as deferred behind its ToolSearch, in the conversation's first
    turn (before any tool call of the script names one)."""
    first = [r.body for r in fake.requests if SEARCH in {t.get("name") for t in r.body.get("tools", [])}]
    assert first, [r.body.get("tools") for r in fake.requests]
    words = json.dumps([first[0].get("system"), first[0].get("messages")])
    return set(re.findall(rf"{re.escape(PREFIX)}[\w-]+", words))


def loaded(fake: ScriptedToolsFake) -> dict[str, dict[str, Any]]:
    """The entry's tools whose definitions Claude Code sent its model, by name (once ToolSearch loaded them)."""
    return {
        tool["name"]: tool
        for request in fake.requests
        for tool in request.body.get("tools", [])
        if str(tool.get("name", "")).startswith(PREFIX)
    }


async def listed(jarvis: RunningJarvis, path: str, token: str, holding: str) -> list[dict[str, Any]]:
    """The tools at `path` as `token`'s person is listed them, as Claude Code gives them to its model; none unless
    `holding` is among them."""
    async with mcp_client(jarvis.url(path), token) as client:
        definitions = model_definitions(await client.list_tools())
    return definitions if any(d["name"] == holding for d in definitions) else []


async def test_claude_code_lists_and_calls_a_server_its_person_connected(
    jarvis: RunningJarvis, notes_profile: str
) -> None:
    home = Path(jarvis.extra_env["HOME"])
    edited = jarvis.cli("client", "edit", "claude-code", "--add", "profile:notes")
    assert f"added {ENTRY} to {home / '.claude.json'}" in edited.stdout, edited.stdout + edited.stderr
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"][ENTRY]
    assert entry["url"] == jarvis.url(notes_profile), entry
    token = entry["headers"]["Authorization"].removeprefix("Bearer ")  # the entry's own token: its person

    # Not connected: Claude Code names its model the one tool that connects, and calling it answers the link.
    before = ask_claude(home, [CONNECT], CONNECT)
    assert announced(before) == {CONNECT}
    assert sorted(loaded(before)) == [CONNECT]
    [search, connect] = before.results()
    assert not search.is_error, search
    link = LINK.search(connect.text)
    assert connect.is_error, connect
    assert link is not None, connect.text
    consent_in_browser(link.group(1), ACCOUNT).close()  # a token's link: confirmed on Jarvis's page, no sign-in

    # Connected: the profile lists the server's tools as the person's connection lists them (once it is up).
    expected = await eventually(
        lambda: listed(jarvis, notes_profile, token, "notes__whoami"), what="the connection's tools listed"
    )
    names = {PREFIX + d["name"] for d in expected}
    assert names == {WHOAMI, f"{PREFIX}notes__admin_whoami"}, expected

    # Claude Code names its model every one of them, loads them as Jarvis lists them, and a call answers as the person.
    after = ask_claude(home, sorted(names), WHOAMI)
    assert announced(after) == names
    tools = loaded(after)
    assert set(tools) == names
    for definition in expected:
        sent = tools[PREFIX + definition["name"]]
        assert {k: sent.get(k) for k in definition} == {**definition, "name": PREFIX + definition["name"]}, sent
    [_, whoami] = after.results()
    assert not whoami.is_error, whoami
    assert json.loads(whoami.text) == {"result": ACCOUNT}  # the structured result, which Claude Code gives its model
