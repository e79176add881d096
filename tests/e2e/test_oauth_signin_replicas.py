"""Sign-in across two aggregator replicas (issue 31 done-when): a `jarvis up` and a `jarvis serve aggregator` on its
registry, both with sign-in and one shared keys directory, behind one public URL (`aggregator_url`, as a balancer's
would be). A token issued by one is accepted by the other, a refresh token from one is redeemed at the other, and
both publish the same keys and the same issuer."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest

from jarvis.common.internal_plane import TOKEN_FILE_NAME
from tests.support.signin import sign_in_via_jarvis, signin_jarvis
from tests.support.stack import RunningJarvis, free_port, mcp_client, result_json, wait_for_url


@dataclass
class Replicas:
    first: RunningJarvis
    second_url: str


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    registry_port = free_port()
    with signin_jarvis(tmp_path_factory, env={"JARVIS_REGISTRY_PORT": str(registry_port)}) as first:
        port = free_port()
        log = Path(tmp_path_factory.mktemp("second")) / "aggregator.log"
        second = subprocess.Popen(
            [sys.executable, "-m", "jarvis.cli", "serve", "aggregator"],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                **first.extra_env,  # the same provider, client, and JARVIS_OAUTH_KEYS_DIR: one shared directory
                "JARVIS_AGGREGATOR_PORT": str(port),
                "JARVIS_AGGREGATOR_REQUIRE_AUTH": "true",
                "JARVIS_AGGREGATOR_REGISTRY_TARGET": f"127.0.0.1:{registry_port}",
                "JARVIS_INTERNAL_TOKEN_FILE": str(first.data_dir / TOKEN_FILE_NAME),
            },
        )
        try:
            wait_for_url(f"http://127.0.0.1:{port}/healthz")
            admin = first.create_token("admin", name="admin")

            async def public_url() -> None:
                # Both replicas are reached at one public URL (a balancer's); the first's stands for it here.
                async with mcp_client(first.url(), admin) as client:
                    answer = {"action": "set", "key": "aggregator_url", "value": first.base_url}
                    await client.call_tool("jarvis_config", answer)

            anyio.run(public_url)
            yield Replicas(first, f"http://127.0.0.1:{port}")
        finally:
            second.terminate()
            second.wait(15)
            print(log.read_text(errors="replace")[-4000:])


async def check_status(url: str, token: str) -> bool:
    async with mcp_client(url, token) as client:
        return bool(result_json(await client.call_tool("jarvis_check_status", {}))["healthy"])


def test_both_replicas_publish_one_issuer_and_one_key_set(replicas: Replicas) -> None:
    first, second = replicas.first.base_url, replicas.second_url
    jwks = [httpx2.get(base + "/oauth/jwks.json").json() for base in (first, second)]
    assert jwks[0] == jwks[1]
    issuers = [
        httpx2.get(base + "/.well-known/oauth-authorization-server").json()["issuer"] for base in (first, second)
    ]
    assert issuers == [first, first]
    resource = httpx2.get(second + "/.well-known/oauth-protected-resource/mcp/jarvis").json()
    assert resource["resource"] == first + "/mcp/jarvis"
    assert resource["authorization_servers"] == [first]


def test_a_token_issued_by_one_replica_is_accepted_by_the_other(replicas: Replicas) -> None:
    client_id, tokens, _ = sign_in_via_jarvis(replicas.first, "alice", "jarvis")
    assert tokens.status_code == 200, tokens.text
    issued_by_first = tokens.json()
    assert anyio.run(check_status, replicas.second_url + "/mcp/jarvis", issued_by_first["access_token"])
    # The refresh token the first issued is redeemed at the second, whose access token the first accepts.
    form = {"grant_type": "refresh_token", "refresh_token": issued_by_first["refresh_token"], "client_id": client_id}
    refreshed = httpx2.post(replicas.second_url + "/oauth/token", data=form)
    assert refreshed.status_code == 200, refreshed.text
    assert anyio.run(check_status, replicas.first.url("/mcp/jarvis"), refreshed.json()["access_token"])
    # Reuse of the first's refresh token, now at the first: the family is revoked on both (one registry).
    reused = httpx2.post(replicas.first.url("/oauth/token"), data=form)
    assert reused.json()["error"] == "invalid_grant"
    again = {"grant_type": "refresh_token", "refresh_token": refreshed.json()["refresh_token"], "client_id": client_id}
    assert httpx2.post(replicas.second_url + "/oauth/token", data=again).json()["error"] == "invalid_grant"
