"""`jarvis.common.urls`: a URL as Jarvis shows it keeps no userinfo and no credential-like query value."""

from __future__ import annotations

import pytest

from jarvis.common.urls import credential_name, masked_url, masked_urls


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://alice:pw@host/mcp?api_key=abc&x=1", "http://***@host/mcp?api_key=***&x=1"),
        ("http://alice@host:8080/mcp", "http://***@host:8080/mcp"),
        ("https://a:b@c@host/p", "https://***@host/p"),  # the last `@` ends the userinfo
        (
            "https://h/mcp?apiKey=1&APIKEY=2&Access_Token=3&sig=4&client_secret=5&password=6&auth=7&key=8&q=9",
            "https://h/mcp?apiKey=***&APIKEY=***&Access_Token=***&sig=***&client_secret=***&password=***&auth=***"
            "&key=***&q=9",
        ),
        (
            "https://bucket.s3.amazonaws.com/o?X-Amz-Credential=a&X-Amz-Date=d&X-Amz-Signature=s",
            "https://bucket.s3.amazonaws.com/o?X-Amz-Credential=***&X-Amz-Date=d&X-Amz-Signature=***",
        ),
        ("https://h/cb#access_token=t&state=s", "https://h/cb#access_token=***&state=s"),  # OAuth's implicit flow
        ("https://h/p?my_refresh_token=t;session_key=k", "https://h/p?my_refresh_token=***;session_key=***"),
        ("https://h/p?api%5Fkey=v", "https://h/p?api%5Fkey=***"),  # the name as a server decodes it
        # Nothing to hide: the URL exactly as given.
        ("https://mcp.example.com/mcp?region=eu&x", "https://mcp.example.com/mcp?region=eu&x"),
        ("https://h/p?key", "https://h/p?key"),
        ("", ""),
        # Not splittable by urllib (a broken IPv6 literal): still no userinfo or key.
        ("http://u:p@[::1/x?token=t", "http://***@[::1/x?token=***"),
    ],
)
def test_masked_url(url: str, shown: str) -> None:
    assert masked_url(url) == shown


def test_credential_names() -> None:
    for name in ("token", "id_token", "X-Goog-Signature", "client-secret", "PASSWD", "pwd", "api-key", "code"):
        assert credential_name(name), name
    for name in ("region", "q", "page", "format", "x"):
        assert not credential_name(name), name


def test_every_url_in_a_text_is_masked() -> None:
    text = (
        "Client error '401 Unauthorized' for url 'https://alice:s3cret@host/mcp?token=t0k&x=1'; "
        "retry at http://host2/mcp?api_key=k3y or see https://docs.example.com/a."
    )
    assert masked_urls(text) == (
        "Client error '401 Unauthorized' for url 'https://***@host/mcp?token=***&x=1'; "
        "retry at http://host2/mcp?api_key=*** or see https://docs.example.com/a."
    )
    assert masked_urls("no url here, token=abc") == "no url here, token=abc"
