"""A client named by a metadata document URL this network cannot reach (issue 48 item 3: Claude Code's, at
claude.ai, on a team network without outbound access) signs in once an admin registers it ahead. A real
`jarvis up` with sign-in federated to a real OpenID provider; the URL is under `.invalid`, which never resolves, so
nothing is contacted. First the authorize request is refused with the command that fixes it, the URL filled in;
after `jarvis oauth-client add --metadata-url URL --from-file doc.json`, the SDK's OAuth client with that URL as its
client id signs in and gets a token: Jarvis used the admin's copy, since a fetch could only have failed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client

from tests.support.signin import (
    CLIENT_REDIRECT,
    MemoryStorage,
    Person,
    authorize_query,
    client_metadata,
    signin_jarvis,
)
from tests.support.stack import RunningJarvis, jarvis_cli, result_json

pytestmark = pytest.mark.anyio

UNREACHABLE = "https://claude-code.invalid/oauth/metadata"
COMMAND = f"jarvis oauth-client add --metadata-url {UNREACHABLE} --from-file"


@pytest.fixture(scope="module")
def signin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    with signin_jarvis(tmp_path_factory) as running:
        yield running


def document(client_id: str = UNREACHABLE) -> dict[str, object]:
    """The document as Claude Code would publish it, saved by the admin where Jarvis runs."""
    return {
        "client_id": client_id,
        "client_name": "Claude Code (registered ahead)",
        "redirect_uris": [CLIENT_REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


def authorize(jarvis: RunningJarvis, accept: str) -> httpx2.Response:
    query = authorize_query(jarvis, UNREACHABLE)
    return httpx2.get(f"{jarvis.url('/oauth/authorize')}?{urlencode(query)}", headers={"Accept": accept}, timeout=30)


async def test_a_client_registered_ahead_signs_in_where_its_metadata_cannot_be_fetched(
    signin: RunningJarvis, tmp_path: Path
) -> None:
    refused = authorize(signin, "application/json")
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "invalid_client"
    assert COMMAND in refused.json()["error_description"]
    page = authorize(signin, "text/html,application/xhtml+xml,*/*;q=0.8")
    assert page.headers["content-type"].startswith("text/html")
    assert COMMAND in page.text

    saved = tmp_path / "claude-code.json"
    saved.write_text(json.dumps(document()))
    added = json.loads(
        signin.cli("oauth-client", "add", "--metadata-url", UNREACHABLE, "--from-file", str(saved)).stdout
    )
    assert added["client_id"] == UNREACHABLE
    assert (added["source"], added["refetch"]) == ("registered ahead", False)
    listed = json.loads(signin.cli("oauth-client", "list").stdout)
    assert [c for c in listed if c["client_id"] == UNREACHABLE] == [added]

    alice = Person("alice")
    redirects: list[str] = []

    async def redirect_handler(url: str) -> None:
        redirects.append(url)

    async def callback_handler():  # type: ignore[no-untyped-def]
        return alice.code_result(await asyncio.to_thread(alice.authorize, redirects[-1]))

    storage = MemoryStorage()
    auth = OAuthClientProvider(
        server_url=signin.url("/mcp/jarvis"),
        client_metadata=client_metadata(),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=UNREACHABLE,
    )
    try:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=60) as http,
            Client(streamable_http_client(signin.url("/mcp/jarvis"), http_client=http), mode="legacy") as client,
        ):
            assert result_json(await client.call_tool("jarvis_check_status", {}))["healthy"] is True
    finally:
        alice.close()
    assert f"client_id={UNREACHABLE.replace(':', '%3A').replace('/', '%2F')}" in redirects[-1]
    assert storage.tokens is not None
    assert storage.tokens.access_token
    assert alice.last_page is not None
    assert "Claude Code (registered ahead)" in alice.last_page.text
    # Once registered ahead it was not fetched: the log holds the two refusals above and nothing after them (a fetch
    # would have failed and been logged; with the record kept for that, the fallback says so).
    log = signin.log()
    assert log.count("names a host that does not resolve") == 2, log[-4000:]
    assert "using the metadata registered ahead" not in log


def test_a_document_naming_another_client_id_is_refused(tmp_path: Path) -> None:
    saved = tmp_path / "doc.json"
    saved.write_text(json.dumps(document("https://claude-code.invalid/other")))
    data = tmp_path / "data"
    refused = jarvis_cli(
        "oauth-client", "add", "--metadata-url", UNREACHABLE, "--from-file", str(saved), data_dir=data, check=False
    )
    assert refused.returncode == 2
    assert "must name its own URL as client_id" in refused.stderr
    assert '"https://claude-code.invalid/other"' in refused.stderr
    assert json.loads(jarvis_cli("oauth-client", "list", data_dir=data).stdout) == []


def test_a_document_given_on_the_command_line_is_checked_as_a_fetched_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    insecure = jarvis_cli(
        "oauth-client",
        "add",
        "--metadata-url",
        UNREACHABLE,
        "--redirect-uri",
        "http://cc.example.test/cb",
        data_dir=data,
        check=False,
    )
    assert insecure.returncode == 2
    assert "https" in insecure.stderr
    made = jarvis_cli(
        "oauth-client",
        "add",
        "--metadata-url",
        UNREACHABLE,
        "--redirect-uri",
        CLIENT_REDIRECT,
        "--name",
        "Claude Code",
        "--refetch",
        data_dir=data,
    )
    assert json.loads(made.stdout) == {
        "client_id": UNREACHABLE,
        "client_name": "Claude Code",
        "redirect_uris": [CLIENT_REDIRECT],
        "token_endpoint_auth_method": "none",
        "source": "registered ahead",
        "refetch": True,
    }
    jarvis_cli("oauth-client", "delete", UNREACHABLE, data_dir=data)
    assert json.loads(jarvis_cli("oauth-client", "list", data_dir=data).stdout) == []
