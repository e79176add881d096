"""`jarvis mcp` relaying to a running `jarvis up` (issue 37 item 6): a script that writes its requests and closes
stdin gets every answer and the relay exits at once; without the token the running Jarvis requires, every request
is answered with an error that names JARVIS_TOKEN and `jarvis token create` as it runs here, and stderr says so too."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.stack import RunningJarvis, start_jarvis

PROTOCOL = "2025-11-25"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    home = tmp_path_factory.mktemp("home")
    running = start_jarvis(tmp_path_factory.mktemp("data"), "--require-auth", env={"HOME": str(home)})
    yield running
    running.stop()


def _requests() -> list[dict[str, Any]]:
    init = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "script", "version": "1"}}
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "jarvis_config", "arguments": {"action": "list"}},
        },
    ]


def _relay(
    running: RunningJarvis, token: str | None, *, elsewhere: Path | None = None
) -> tuple[list[dict[str, Any]], str, float]:
    """Write every request at once, close stdin, and read until the relay exits: (answers, stderr, seconds). With
    `elsewhere`, a person's machine (that home, no data dir of the Jarvis's): `jarvis mcp --url`, as Claude Desktop's
    entry from the console runs it."""
    env = {k: v for k, v in os.environ.items() if k != "JARVIS_TOKEN"}
    env.update(running.extra_env)
    if token:
        env["JARVIS_TOKEN"] = token
    command = ["--data-dir", str(running.data_dir), "mcp", "--surface", "jarvis"]
    if elsewhere is not None:
        env["HOME"] = str(elsewhere)
        command = ["--data-dir", str(elsewhere / "data"), "mcp", "--url", running.url("/mcp/jarvis")]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "jarvis.cli", *command],
        input="".join(json.dumps(r) + "\n" for r in _requests()),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    took = time.monotonic() - started
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return answers, done.stderr, took


def test_a_script_that_closes_stdin_gets_every_answer_and_the_relay_exits(secured: RunningJarvis) -> None:
    token = secured.create_token("jarvis", name="relay")
    answers, stderr, took = _relay(secured, token)
    by_id = {a["id"]: a for a in answers if "id" in a}
    assert sorted(by_id) == [1, 2, 3], (answers, stderr[-2000:])
    assert by_id[1]["result"]["protocolVersion"] == PROTOCOL
    assert "result" in by_id[2], (by_id[2], stderr[-2000:])  # an error answer says which, when it happens
    assert any(t["name"] == "jarvis_config" for t in by_id[2]["result"]["tools"])
    assert not by_id[3]["result"].get("isError"), by_id[3]
    assert took < 15, f"the relay took {took:.1f} s to answer and exit"


def test_a_person_elsewhere_relays_by_url_with_their_token(secured: RunningJarvis, tmp_path: Path) -> None:
    """Claude Desktop's entry from the console: `jarvis mcp --url` on a machine that holds none of this Jarvis's data
    relays to the surface at that URL with JARVIS_TOKEN, and a URL that is not one is refused before anything runs."""
    token = secured.create_token("jarvis", name="desktop")
    answers, stderr, _ = _relay(secured, token, elsewhere=tmp_path)
    by_id = {a["id"]: a for a in answers if "id" in a}
    assert sorted(by_id) == [1, 2, 3], (answers, stderr[-2000:])
    assert any(t["name"] == "jarvis_config" for t in by_id[2]["result"]["tools"])
    assert not by_id[3]["result"].get("isError"), by_id[3]
    assert not (tmp_path / "data").exists()  # it kept no data of its own
    refused = subprocess.run(
        [sys.executable, "-m", "jarvis.cli", "mcp", "--url", "ftp://x"], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode != 0
    assert "is no http(s) URL" in refused.stderr


def test_without_the_token_every_request_names_what_to_do(secured: RunningJarvis) -> None:
    answers, stderr, took = _relay(secured, None)
    errors = {a["id"]: a["error"] for a in answers}
    assert sorted(errors) == [1, 2, 3], answers
    for error in errors.values():
        assert "JARVIS_TOKEN" in error["message"]
        assert "token create --name NAME --scope SCOPE" in error["message"]
    assert "JARVIS_TOKEN" in stderr
    assert took < 15
    # The command named works as printed (issue 46): this Jarvis's CLI, with its data dir.
    printed = re.search(r"`([^`]*token create --name NAME --scope SCOPE)`", errors[1]["message"])
    assert printed is not None, errors[1]["message"]
    command = printed.group(1).replace("NAME", "relay-hint").replace("SCOPE", "jarvis")
    env = {**os.environ, **secured.extra_env, "JARVIS_LOG_LEVEL": "WARNING"}
    created = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("jv_")


def test_a_refused_token_is_told_apart_from_a_missing_one(secured: RunningJarvis) -> None:
    answers, stderr, _ = _relay(secured, "jv_not_a_real_token")
    assert all("refused JARVIS_TOKEN" in a["error"]["message"] for a in answers)
    assert "invalid, expired or revoked" in stderr
