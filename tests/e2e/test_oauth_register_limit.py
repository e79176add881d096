"""Dynamic client registration (/oauth/register) is rate limited per client address (issue 31 item 2): a stranger
may register, but a flood from one address gets 429 with an OAuth error body saying when to retry, while another
address registers as before. A real `jarvis up` with sign-in, registrations 60 a minute in bursts of 3."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from tests.support.signin import CLIENT_REDIRECT, signin_jarvis
from tests.support.stack import RunningJarvis

BURST = 3


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    env = {"JARVIS_OAUTH_REGISTER_PER_MINUTE": "60", "JARVIS_OAUTH_REGISTER_BURST": str(BURST)}
    with signin_jarvis(tmp_path_factory, env=env) as running:
        yield running


def register(jarvis: RunningJarvis, source: str = "127.0.0.1") -> httpx2.Response:
    transport = httpx2.HTTPTransport(local_address=source)
    with httpx2.Client(transport=transport, timeout=10) as http:
        return http.post(jarvis.url("/oauth/register"), json={"redirect_uris": [CLIENT_REDIRECT]})


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
