"""Which copy of a metadata-URL client Jarvis uses (issue 48 item 3): one registered ahead is used as given and never
fetched; one registered with refetch is fetched, the admin's copy standing in only while the fetch fails; an unknown
URL is fetched as before, its refusal reaching the caller."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.datastructures import Address

from jarvis.aggregator.gateways.oauth_state import Stored
from jarvis.aggregator.oauth.server.cimd import described_client
from jarvis.aggregator.oauth.server.clients import Client, Clients
from jarvis.aggregator.oauth.server.errors import OAuthError

pytestmark = pytest.mark.anyio

URL = "https://claude-code.invalid/oauth/metadata"
AHEAD = described_client(URL, {"client_id": URL, "client_name": "ahead", "redirect_uris": ["https://a.test/cb"]})
FETCHED = Client(URL, "fetched", ("https://f.test/cb",))


class Store:
    def __init__(self) -> None:
        self.records: dict[tuple[str, str], dict[str, Any]] = {}

    async def put(self, kind: str, key: str, body: dict[str, Any]) -> None:
        self.records[kind, key] = body

    async def get(self, kind: str, key: str) -> Stored | None:
        body = self.records.get((kind, key))
        return Stored(key, body, "", False) if body is not None else None


class Documents:
    """cimd.MetadataDocuments as seen from Clients: each fetch counted, answering `FETCHED` or failing."""

    def __init__(self, reachable: bool) -> None:
        self.reachable = reachable
        self.fetched: list[str] = []

    async def fetch(self, url: str, caller: Address | None = None) -> Client:
        self.fetched.append(url)
        if not self.reachable:
            raise OAuthError(
                "invalid_client", f"the client metadata document at {url} names a host that does not resolve"
            )
        return FETCHED


async def test_a_client_registered_ahead_is_never_fetched() -> None:
    documents = Documents(reachable=True)
    clients = Clients(Store(), documents)  # type: ignore[arg-type]
    shown = await clients.register_ahead(AHEAD, refetch=False)
    assert (shown["source"], shown["refetch"]) == ("registered ahead", False)
    assert await clients.find(URL, Address("127.0.0.1", 1)) == AHEAD
    assert documents.fetched == []


async def test_with_refetch_the_fetched_document_wins_and_the_copy_stands_in_while_it_fails() -> None:
    documents = Documents(reachable=True)
    clients = Clients(Store(), documents)  # type: ignore[arg-type]
    await clients.register_ahead(AHEAD, refetch=True)
    assert await clients.find(URL) == FETCHED
    documents.reachable = False
    assert await clients.find(URL) == AHEAD
    assert documents.fetched == [URL, URL]


async def test_an_unknown_url_is_fetched_and_its_refusal_reaches_the_caller() -> None:
    documents = Documents(reachable=False)
    clients = Clients(Store(), documents)  # type: ignore[arg-type]
    with pytest.raises(OAuthError, match="does not resolve"):
        await clients.find(URL)
    assert documents.fetched == [URL]
