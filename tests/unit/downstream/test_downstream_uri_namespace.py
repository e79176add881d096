"""Namespaced resource URIs of a profile that mixes servers, and the caching hint of a merged list."""

from __future__ import annotations

import itertools

import pytest

from jarvis.aggregator.downstream.hosting.naming import namespaced_uri, split_uri
from jarvis.aggregator.downstream.proxy.aggregate import strictest

# URIs as servers write them: any scheme, templates with every expression kind, odd characters, and one that
# already looks like a namespaced URI.
URIS = [
    "test://static-text",
    "file:///home/me/notes.md",
    "urn:isbn:0451450523",
    "https://example.com/a?b=c#d",
    "demo://resource/dynamic/text/{resourceId}",
    "repo://{owner}/{repo}/blob/{+path}{?ref}",
    "db:/tables/ü ber/%20x",
    "jarvis://other/test://x",
    "",
]
SERVERS = ["alpha", "b", "my-server.v2", "a_b", "0"]


@pytest.mark.parametrize(("server", "uri"), itertools.product(SERVERS, URIS))
def test_a_namespaced_uri_reverses_to_its_server_and_uri(server: str, uri: str) -> None:
    assert split_uri(namespaced_uri(server, uri)) == (server, uri)


def test_no_two_server_uris_share_a_namespaced_uri() -> None:
    pairs = list(itertools.product(SERVERS, URIS))
    assert len({namespaced_uri(server, uri) for server, uri in pairs}) == len(pairs)


def test_an_expanded_template_reverses_like_the_template() -> None:
    template = namespaced_uri("alpha", "test://template/{id}/data")
    expanded = template.replace("{id}", "42")
    assert split_uri(expanded) == ("alpha", "test://template/42/data")


@pytest.mark.parametrize("uri", ["test://static-text", "jarvis://alpha", "jarvis:///x", "Jarvis://a/b", "jarvis:/a/b"])
def test_what_is_not_a_namespaced_uri_is_said_so(uri: str) -> None:
    assert split_uri(uri) is None


def test_the_strictest_hint_takes_the_shortest_ttl_and_private_over_public() -> None:
    public = {"ttlMs": 60_000, "cacheScope": "public"}
    assert strictest([public]) == public
    assert strictest([public, {"ttlMs": 30_000, "cacheScope": "public"}]) == {"ttlMs": 30_000, "cacheScope": "public"}
    assert strictest([public, {"ttlMs": 90_000, "cacheScope": "private"}]) == {"ttlMs": 60_000, "cacheScope": "private"}
    # A part that promised nothing (a 2025-era server) is immediately stale and private.
    assert strictest([public, {"tools": []}]) == {"ttlMs": 0, "cacheScope": "private"}
    assert strictest([]) == {}
