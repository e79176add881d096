"""Dynamic client registration (/oauth/register) is rate limited per client address (issue 31 item 2): a stranger
may register, but a flood from one address gets 429 with an OAuth error body saying when to retry, while another
address registers as before. So are the Client ID Metadata Document fetches a stranger's authorize request makes
(issue 44 finding 11), and the client address is the one a request came from, unless it came through a proxy an
admin named (issue 44 finding 10). A real `jarvis up` with sign-in, registrations 60 a minute in bursts of 3."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.http_fake import serve_app
from tests.support.signin import CLIENT_REDIRECT, authorize_query, signin_jarvis
from tests.support.stack import RunningJarvis

BURST = 3


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    env = {"JARVIS_OAUTH_REGISTER_PER_MINUTE": "60", "JARVIS_OAUTH_REGISTER_BURST": str(BURST)}
    with signin_jarvis(tmp_path_factory, env=env) as running:
        yield running


def register(jarvis: RunningJarvis, source: str = "127.0.0.1", forwarded_for: str = "") -> httpx2.Response:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    transport = httpx2.HTTPTransport(local_address=source)
    with httpx2.Client(transport=transport, timeout=10) as http:
        return http.post(jarvis.url("/oauth/register"), json={"redirect_uris": [CLIENT_REDIRECT]}, headers=headers)


def test_a_flood_of_registrations_from_one_address_is_refused_with_an_oauth_error(limited: RunningJarvis) -> None:
    answers = [register(limited) for _ in range(BURST + 2)]
    assert [a.status_code for a in answers[:BURST]] == [201] * BURST
    refused = answers[-1]
    assert refused.status_code == 429
    body = refused.json()
    assert body["error"] == "temporarily_unavailable"
    assert "too many client registrations from 127.0.0.1" in body["error_description"]
    assert "60 a minute" in body["error_description"]
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["cache-control"] == "no-store"
    # Another address is not held back by this one's flood (127.0.0.2 is loopback too on Linux).
    assert register(limited, "127.0.0.2").status_code == 201
    # Nothing else of the server is limited by it: its metadata, and the refusal is counted.
    assert httpx2.get(limited.url("/.well-known/oauth-authorization-server")).status_code == 200
    metrics = httpx2.get(limited.url("/metrics"), headers={"Authorization": f"Bearer {limited.create_token('admin')}"})
    assert 'jarvis_rate_limited_total{reason="rate",surface="oauth"}' in metrics.text


def test_a_forwarded_for_made_up_per_request_does_not_lift_the_limit(limited: RunningJarvis) -> None:
    """uvicorn believed X-Forwarded-For from 127.0.0.1 by default: a header rotated per request made each registration
    another address's, and 30 of 30 were accepted. No proxy is named here, so the header is not read at all: the
    requests count against 127.0.0.1, as they would without it."""
    answers = [register(limited, "127.0.0.1", f"198.51.100.{i}") for i in range(BURST + 2)]
    assert answers[-1].status_code == 429, [a.status_code for a in answers]
    assert "too many client registrations from 127.0.0.1" in answers[-1].json()["error_description"]


@pytest.fixture(scope="module")
def behind_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    env = {
        "JARVIS_OAUTH_REGISTER_PER_MINUTE": "60",
        "JARVIS_OAUTH_REGISTER_BURST": str(BURST),
        "JARVIS_TRUSTED_PROXIES": "127.0.0.1",
    }
    with signin_jarvis(tmp_path_factory, env=env) as running:
        yield running


def test_the_forwarded_for_of_a_proxy_an_admin_named_is_believed(behind_proxy: RunningJarvis) -> None:
    # Through the proxy (127.0.0.1), each client is its own address: many clients, none held back by the others.
    assert [register(behind_proxy, forwarded_for=f"198.51.100.{i}").status_code for i in range(BURST + 2)] == [201] * (
        BURST + 2
    )
    # One client flooding through the proxy is limited as itself.
    flood = [register(behind_proxy, forwarded_for="203.0.113.7") for _ in range(BURST + 2)]
    assert flood[-1].status_code == 429
    assert "too many client registrations from 203.0.113.7" in flood[-1].json()["error_description"]
    # A peer that is not the proxy is held to its own address whatever it forwards.
    other = [register(behind_proxy, "127.0.0.2", f"198.51.100.{100 + i}") for i in range(BURST + 2)]
    assert other[-1].status_code == 429
    assert "too many client registrations from 127.0.0.2" in other[-1].json()["error_description"]


@pytest.fixture(scope="module")
def documents() -> Iterator[tuple[str, list[str]]]:
    """A loopback host serving a client metadata document at any path but /missing-*, and the paths it was asked."""
    asked: list[str] = []

    async def document(request: Request) -> Response:
        asked.append(request.url.path)
        if request.url.path.startswith("/missing-"):
            return Response(status_code=404)
        return JSONResponse({"client_id": str(request.url), "redirect_uris": [CLIENT_REDIRECT]})

    with serve_app(Starlette(routes=[Route("/{path:path}", document)])) as base:
        yield base, asked


def authorize(jarvis: RunningJarvis, client_id: str, source: str) -> httpx2.Response:
    query = authorize_query(jarvis, client_id)
    with httpx2.Client(transport=httpx2.HTTPTransport(local_address=source), timeout=10) as http:
        return http.get(jarvis.url("/oauth/authorize"), params=query)


def test_metadata_document_fetches_are_limited_per_client_address(
    limited: RunningJarvis, documents: tuple[str, list[str]]
) -> None:
    """25 authorize requests, unauthenticated, each naming another client_id URL, made 25 fetches."""
    base, asked = documents
    before, started = len(asked), time.monotonic()
    answers = [authorize(limited, f"{base}/client-{i}.json", "127.0.0.3") for i in range(25)]
    allowed = BURST + math.ceil(time.monotonic() - started)  # 60 a minute: one more each second
    passed = [a for a in answers if a.status_code != 429]
    assert all(a.status_code == 303 for a in passed), [a.text for a in passed]  # on to the identity provider
    assert BURST <= len(passed) <= allowed
    assert len(asked) - before == len(passed)
    # The first refusal, not the last answer: on a slow machine the bucket may have refilled by the 25th request.
    refused = next(a for a in answers if a.status_code == 429).json()
    assert refused["error"] == "temporarily_unavailable"
    description = refused["error_description"]
    assert "too many client metadata document fetches from 127.0.0.3" in description
    assert "at most 60 a minute (bursts of 3)" in description


def test_token_and_revocation_requests_are_held_to_the_same_fetch_limit(
    limited: RunningJarvis, documents: tuple[str, list[str]]
) -> None:
    """A client_id URL needs no authorize request to be fetched: a token or revocation request naming one fetches it
    too, so those are limited per client address the same way."""
    base, asked = documents
    before, started = len(asked), time.monotonic()
    answers = []
    for i in range(12):
        form = {"grant_type": "refresh_token", "refresh_token": "r", "client_id": f"{base}/token-{i}.json"}
        with httpx2.Client(transport=httpx2.HTTPTransport(local_address="127.0.0.5"), timeout=10) as http:
            path = "/oauth/token" if i % 2 else "/oauth/revoke"
            answers.append(http.post(limited.url(path), data={**form, "token": "r"}))
    assert len(asked) - before <= BURST + math.ceil(time.monotonic() - started)
    assert any("too many client metadata document fetches from 127.0.0.5" in a.text for a in answers)


def test_a_failing_metadata_document_is_not_fetched_again(
    limited: RunningJarvis, documents: tuple[str, list[str]]
) -> None:
    base, asked = documents
    path = f"/missing-{uuid.uuid4().hex}.json"
    for _ in range(2):
        answer = authorize(limited, f"{base}{path}", "127.0.0.4")
        assert answer.status_code == 400
        assert "answered HTTP 404" in answer.json()["error_description"]
    assert asked.count(path) == 1
