"""Which URL Jarvis names itself by at an authorization server that takes Client ID Metadata Documents (issue 47 item
3): its own document under its configured public URL when that is https, or loopback where tests allow loopback; a
configured URL instead when one is set, none with `off`. The e2e test is tests/e2e/test_downstream_oauth_cimd.py."""

from __future__ import annotations

import pytest

from jarvis.aggregator.downstream.auth.provider import client_document, client_id_url

DOCUMENT = "/oauth/downstream/client.json"


@pytest.mark.parametrize(
    ("configured", "base_url", "loopback", "named"),
    [
        ("", "https://jarvis.example", False, "https://jarvis.example" + DOCUMENT),
        ("", "https://jarvis.example/", False, "https://jarvis.example" + DOCUMENT),
        ("", "http://jarvis.example", True, None),  # plain http off loopback: never
        ("", "http://127.0.0.1:8080", False, None),  # loopback only where tests allow it
        ("", "http://127.0.0.1:8080", True, "http://127.0.0.1:8080" + DOCUMENT),
        ("", "http://localhost:8080", True, "http://localhost:8080" + DOCUMENT),
        ("", "http://[::1]:8080", True, "http://[::1]:8080" + DOCUMENT),
        ("https://cdn.example/jarvis.json", "http://10.0.0.1", False, "https://cdn.example/jarvis.json"),
        ("off", "https://jarvis.example", False, None),
    ],
)
def test_client_id_url(configured: str, base_url: str, loopback: bool, named: str | None) -> None:
    assert client_id_url(configured, base_url, loopback) == named


def test_the_document_is_its_own_url() -> None:
    document = client_document("https://jarvis.example/")
    assert document["client_id"] == client_id_url("", "https://jarvis.example")
    assert document["redirect_uris"] == ["https://jarvis.example/oauth/downstream/callback"]
    assert document["token_endpoint_auth_method"] == "none"
