"""Client ID Metadata Documents (the MCP 2025-11-25 default): a client_id that is an https URL names a JSON
document describing the client, fetched from there.

Jarvis fetches what a stranger names, so with limits: https only (plain http only to a loopback address, and only
where an admin allowed it, for tests and local clients), no address that is not public (the egress proxy's rule,
jarvis.common.addresses), no redirects, 5 s, 64 KiB. A document is kept 5 minutes.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import time
from urllib.parse import urlsplit

import httpx2

from jarvis.aggregator.oauth.server.clients import Client, metadata_client
from jarvis.aggregator.oauth.server.errors import OAuthError
from jarvis.common.addresses import is_internal, is_loopback

MAX_BYTES = 64 * 1024
TIMEOUT_SECONDS = 5.0
_KEEP_SECONDS = 300.0


def _refused(url: str, why: str) -> OAuthError:
    return OAuthError("invalid_client", f"the client metadata document at {url} {why}")


class MetadataDocuments:
    def __init__(self, allow_loopback: bool = False) -> None:
        # JARVIS_OAUTH_CIMD_ALLOW_LOOPBACK: documents may be served over plain http from a loopback address.
        self.allow_loopback = allow_loopback
        self._kept: dict[str, tuple[float, Client]] = {}

    async def _check_host(self, url: str, scheme: str, host: str, port: int) -> None:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            raise _refused(url, "names a host that does not resolve") from None
        addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos}
        loopback = all(is_loopback(a) for a in addresses)
        if loopback and self.allow_loopback:
            return
        if any(is_internal(a) for a in addresses):
            raise _refused(url, "is on an internal address; Jarvis fetches client metadata from public hosts only")
        if scheme != "https":
            raise _refused(url, "must be served over https")

    async def fetch(self, url: str) -> Client:
        kept = self._kept.get(url)
        if kept is not None and kept[0] > time.monotonic():
            return kept[1]
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http") or not parts.hostname or parts.fragment or parts.username:
            raise _refused(url, "must be an https URL without credentials or fragment")
        if parts.path in ("", "/"):
            raise _refused(url, "must have a path (the MCP spec's rule for client_id URLs)")
        await self._check_host(
            url, parts.scheme, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        )
        try:
            body = await asyncio.wait_for(self._download(url), TIMEOUT_SECONDS)
        except TimeoutError:
            raise _refused(url, f"did not arrive within {TIMEOUT_SECONDS:.0f} s") from None
        try:
            document = json.loads(body)
        except ValueError:
            raise _refused(url, "is not JSON") from None
        if not isinstance(document, dict) or document.get("client_id") != url:
            raise _refused(url, "must be a JSON object whose client_id is its own URL")
        if document.get("token_endpoint_auth_method", "none") != "none":
            raise _refused(url, "may only describe a public client (token_endpoint_auth_method none)")
        client = metadata_client(url, document, "invalid_client")
        self._kept[url] = (time.monotonic() + _KEEP_SECONDS, client)
        return client

    async def _download(self, url: str) -> bytes:
        try:
            async with (
                httpx2.AsyncClient(follow_redirects=False, timeout=TIMEOUT_SECONDS) as client,
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
        except httpx2.HTTPError as exc:
            raise _refused(url, f"could not be fetched ({type(exc).__name__})") from None
