"""Where Jarvis's OAuth client may go for a person: metadata, authorization servers, token endpoints.

A URL on an internal address (loopback, private, link-local, metadata services: jarvis.common.addresses) is refused
unless it is on the downstream server's own host (an admin installed that server), on a host an admin allowed
(`JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS`), or on loopback where tests allow it (`JARVIS_DOWNSTREAM_OAUTH_ALLOW_LOOPBACK`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

import httpx2
from pydantic_settings import BaseSettings, SettingsConfigDict

from jarvis.common.addresses import is_internal, is_loopback


class OAuthClientSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="JARVIS_DOWNSTREAM_OAUTH_", extra="ignore")
    allow_hosts: list[str] = []
    allow_loopback: bool = False
    # How long a consent link stays good, and how long a call told to authorize may wait for it (URL elicitation).
    consent_seconds: float = 600.0
    # How long a call waits for the authorization server's metadata and registration before the link exists.
    ready_seconds: float = 20.0
    # Access tokens are refreshed this long before they expire (at most half their life).
    refresh_ahead_seconds: float = 60.0
    # A client id Jarvis publishes as a Client ID Metadata Document: `<public URL>/oauth/downstream/client.json`
    # when the public URL is https; empty: none (pre-registered or dynamic registration instead).
    client_metadata_url: str = ""


class AddressRefused(httpx2.HTTPError):
    """An OAuth URL points at an internal address no admin allowed."""


class AddressGuard:
    def __init__(self, server_url: str, settings: OAuthClientSettings) -> None:
        self.own_host = (urlsplit(server_url).hostname or "").lower()
        self.settings = settings

    async def check(self, request: httpx2.Request) -> None:
        """An httpx2 request hook: raise AddressRefused for a request to an internal address not allowed."""
        host = (request.url.host or "").lower()
        if host == self.own_host or host in {h.lower() for h in self.settings.allow_hosts}:
            return
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            raise AddressRefused(f"the OAuth host {host} does not resolve") from None
        addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos}
        if self.settings.allow_loopback and all(is_loopback(a) for a in addresses):
            return
        if any(is_internal(a) for a in addresses):
            raise AddressRefused(
                f"the server's OAuth metadata points at {host}, an internal address; Jarvis does not go there "
                "unless an admin allows that host (JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS)"
            )
