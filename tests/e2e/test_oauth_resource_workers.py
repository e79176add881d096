"""Access tokens across `jarvis up --workers 2` (issue 31 item 1): both workers check a JWT with the keys in the one
shared directory, and see a rotation and a prune made elsewhere (here, by the test) at their next check."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from jarvis.aggregator.oauth import access_tokens
from jarvis.aggregator.oauth.keys import SigningKeys
from tests.support.redis_server import redis_url
from tests.support.stack import RunningJarvis, free_port, start_jarvis

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "w", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningJarvis, Path]]:
    keys = tmp_path_factory.mktemp("keys") / "oauth-keys"
    home = tmp_path_factory.mktemp("home")
    with redis_url(tmp_path_factory.mktemp("redis")) as redis:
        running = start_jarvis(
            home / "data",
            "--workers",
            "2",
            "--require-auth",
            env={
                "HOME": str(home),
                "JARVIS_REDIS_URL": redis,
                "JARVIS_OIDC_ISSUER": f"http://127.0.0.1:{free_port()}",
                "JARVIS_OIDC_CLIENT_ID": "jarvis",
                "JARVIS_OIDC_CLIENT_SECRET": "unused",
                "JARVIS_OAUTH_KEYS_DIR": str(keys),
            },
            timeout=180,
        )
        try:
            yield running, keys
        finally:
            running.stop()


def mint(running: RunningJarvis, keys: SigningKeys) -> str:
    return access_tokens.issue(
        keys,
        issuer=running.base_url,
        subject="alice",
        audience=running.url("/mcp/jarvis"),
        scopes=["jarvis"],
        client_id="c",
        ttl_seconds=300,
    )


def statuses(running: RunningJarvis, token: str, tries: int = 20) -> set[int]:
    """The answers to `tries` requests, each on a connection of its own (so both workers get some)."""
    with httpx2.Client(limits=httpx2.Limits(max_keepalive_connections=0), timeout=10) as http:
        auth = {**HEADERS, "Authorization": f"Bearer {token}"}
        return {
            http.post(running.url("/mcp/jarvis"), content=json.dumps(INITIALIZE), headers=auth).status_code
            for _ in range(tries)
        }


def test_both_workers_follow_the_shared_keys(workers: tuple[RunningJarvis, Path]) -> None:
    running, directory = workers
    pids: set[int] = set()
    deadline = time.monotonic() + 90  # the second worker may still be starting on a loaded machine
    while len(pids) < 2 and time.monotonic() < deadline:
        with httpx2.Client(limits=httpx2.Limits(max_keepalive_connections=0), timeout=10) as http:
            pids = {http.get(running.url("/livez")).json()["pid"] for _ in range(40)}
    assert len(pids) == 2, "both workers should answer on the one port"
    keys = SigningKeys.load(directory)
    before, unsent = mint(running, keys), mint(running, keys)
    assert statuses(running, before) == {200}
    for path in directory.glob("*.pem"):
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    keys.rotate()
    assert statuses(running, mint(running, keys)) == {200}, "a key added elsewhere signs tokens both accept"
    keys.prune(600)
    assert statuses(running, unsent) == {401}, "a pruned key's tokens are refused by both"
