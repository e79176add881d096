"""Client ID Metadata Documents (the MCP 2025-11-25 default): a client_id that is an https URL names a JSON
document describing the client, fetched from there.

Jarvis fetches what a stranger names, so with limits: https only (plain http only to a loopback address, and only
where an admin allowed it, for tests and local clients), no address that is not public (the egress proxy's rule,
jarvis.common.addresses), connecting to the address checked (pinned.py: no second lookup to rebind), no redirects,
5 s, 64 KiB. A document is kept 5 minutes, and so is a refusal, so a failing URL asked for again costs no fetch.
Fetches that reach the network are limited per client address as registrations are (issue 44 finding 11: each
authorize request naming a new URL was a fetch).

A network that cannot reach a document (issue 48 item 3: Claude Code's, on a team network without outbound access)
is told how to register the client ahead instead: the same document, checked by `described_client` as a fetched one
is, kept under its URL (clients.py) and used without a fetch.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from urllib.parse import urlsplit

import httpx2
from starlette.datastructures import Address

from jarvis.aggregator.oauth.server.clients import MAX_CLIENT_ID, Client, metadata_client
from jarvis.aggregator.oauth.server.errors import OAuthError
from jarvis.aggregator.pinned import Reach, Refused, Why, pin
from jarvis.aggregator.ratelimit import RateLimiter

MAX_BYTES = 64 * 1024
TIMEOUT_SECONDS = 5.0
KEEP_SECONDS = 300.0
FETCH = "oauth_cimd_fetch"  # the rate limiter's "tool": fetches are limited per client address
_MAX_KEPT = 10_000  # documents and refusals kept at once; the oldest go first past it
_WHY = {
    Why.UNRESOLVED: "names a host that does not resolve",
    Why.INTERNAL: "is on an internal address; Jarvis fetches client metadata from public hosts only",
    Why.PUBLIC: "must be served over https",
}


def _refused(url: str, why: str) -> OAuthError:
    return OAuthError("invalid_client", f"the client metadata document at {url} {why}")


def _unreachable(url: str, why: str) -> OAuthError:
    """A document this network did not deliver: the refusal names the admin command that makes the fetch needless."""
    return _refused(
        url,
        f"{why}. Where Jarvis cannot reach it, an admin can register the client ahead with the document saved as a "
        f"file: jarvis oauth-client add --metadata-url {url} --from-file client-metadata.json "
        f"(or --redirect-uri URI instead of --from-file)",
    )


def check_url(url: str, allow_loopback: bool = False) -> Reach:
    """Where the document at `url` may be fetched from, judged before anything is fetched; OAuthError for a URL that
    is no client_id (also the check for one registered ahead, never fetched)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.fragment or parts.username:
        raise _refused(url, "must be an https URL without credentials or fragment")
    if parts.path in ("", "/"):
        raise _refused(url, "must have a path (the MCP spec's rule for client_id URLs)")
    if len(url) > MAX_CLIENT_ID:
        raise _refused(url, f"is longer than the {MAX_CLIENT_ID} characters a client_id may have")
    if parts.scheme == "https":
        return Reach(public=True, loopback=allow_loopback)
    if not allow_loopback:
        raise _refused(url, _WHY[Why.PUBLIC])
    return Reach(public=False, loopback=True)


def described_client(url: str, document: object) -> Client:
    """The client the metadata document at `url` describes, checked the same whether fetched or given by an admin."""
    if not isinstance(document, dict):
        raise _refused(url, "must be a JSON object whose client_id is its own URL")
    if document.get("client_id") != url:
        named = json.dumps(document.get("client_id"))[:300]  # quoted as given: a stranger's text, kept short
        raise _refused(url, f"must name its own URL as client_id, but names {named}")
    if document.get("token_endpoint_auth_method", "none") != "none":
        raise _refused(url, "may only describe a public client (token_endpoint_auth_method none)")
    return metadata_client(url, document, "invalid_client")


class MetadataDocuments:
    def __init__(self, allow_loopback: bool = False, limiter: RateLimiter | None = None) -> None:
        # JARVIS_OAUTH_CIMD_ALLOW_LOOPBACK: documents may be served over plain http from a loopback address.
        self.allow_loopback = allow_loopback
        # Per client address (its default limit: JARVIS_OAUTH_REGISTER_*); None: fetches are not limited.
        self.limiter = limiter
        self._kept: dict[str, tuple[float, Client | OAuthError]] = {}

    async def fetch(self, url: str, caller: Address | None = None) -> Client:
        """The client `url` describes, or OAuthError. `caller`: the address asking (an authorize request), whose
        fetches are limited; None for a client already met (callback, token), whose document is normally kept."""
        kept = self._kept.get(url)
        if kept is not None and kept[0] > time.monotonic():
            if isinstance(kept[1], OAuthError):
                raise OAuthError(kept[1].error, kept[1].description, kept[1].status)
            return kept[1]
        reach = check_url(url, self.allow_loopback)
        if caller is not None:
            self._limit(caller.host)
        try:
            client = await self._fetch(url, reach)
        except OAuthError as refused:
            self._keep(url, refused)
            raise
        self._keep(url, client)
        return client

    def _limit(self, address: str) -> None:
        if self.limiter is None:
            return
        refusal = self.limiter.check(address, "oauth", FETCH)
        if refusal is None:
            return
        limit = self.limiter.limit_for(FETCH)
        raise OAuthError(
            "temporarily_unavailable",
            f"too many client metadata document fetches from {address}: at most {limit.per_second * 60:g} a minute "
            f"(bursts of {limit.burst}); retry after {math.ceil(refusal.retry_after)} s",
            429,
        )

    def _keep(self, url: str, answer: Client | OAuthError) -> None:
        now = time.monotonic()
        if len(self._kept) >= _MAX_KEPT:
            self._kept = {k: v for k, v in self._kept.items() if v[0] > now}
            while len(self._kept) >= _MAX_KEPT:
                del self._kept[next(iter(self._kept))]
        self._kept[url] = (now + KEEP_SECONDS, answer)

    async def _fetch(self, url: str, reach: Reach) -> Client:
        try:
            body = await asyncio.wait_for(self._download(url, reach), TIMEOUT_SECONDS)
        except TimeoutError:
            raise _unreachable(url, f"did not arrive within {TIMEOUT_SECONDS:.0f} s") from None
        try:
            document = json.loads(body)
        except ValueError:
            raise _refused(url, "is not JSON") from None
        return described_client(url, document)

    async def _download(self, url: str, reach: Reach) -> bytes:
        async def pinned(request: httpx2.Request) -> None:
            await pin(request, reach)

        try:
            async with (
                httpx2.AsyncClient(
                    follow_redirects=False, timeout=TIMEOUT_SECONDS, event_hooks={"request": [pinned]}
                ) as client,
                client.stream("GET", url, headers={"Accept": "application/json"}) as response,
            ):
                if response.status_code != 200:
                    raise _refused(url, f"answered HTTP {response.status_code}, not 200")
                received = bytearray()
                async for chunk in response.aiter_bytes():
                    received += chunk
                    if len(received) > MAX_BYTES:
                        raise _refused(url, f"is larger than {MAX_BYTES // 1024} KiB")
                return bytes(received)
        except Refused as refused:
            raise _unreachable(url, _WHY[refused.why]) from None
        except httpx2.HTTPError as exc:
            raise _unreachable(url, f"could not be fetched ({type(exc).__name__})") from None
