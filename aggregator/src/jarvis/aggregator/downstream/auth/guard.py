"""Where Jarvis's OAuth client may go for a person: metadata, authorization servers, token endpoints.

A URL on an internal address (loopback, private, link-local, metadata services: jarvis.common.addresses) is refused
unless it is on the downstream server's own host (an admin installed that server), on a host an admin allowed
(`JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS`), or on loopback where tests allow it (`JARVIS_DOWNSTREAM_OAUTH_ALLOW_LOOPBACK`).
Any other host is looked up once and the request goes to the address checked (pinned.py), never to what a second
lookup answers (issue 44 finding 2: DNS rebinding).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx2
from pydantic_settings import BaseSettings, SettingsConfigDict

from jarvis.aggregator.pinned import Reach, Refused, Why, pin


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
    # The client id Jarvis names itself by where an authorization server takes Client ID Metadata Documents, instead
    # of registering. Empty: its own, `<public URL>/oauth/downstream/client.json`, when the public URL is https (or
    # loopback with allow_loopback); `off`: none (a pre-registered client or dynamic registration instead).
    client_metadata_url: str = ""


class AddressRefused(httpx2.HTTPError):
    """An OAuth URL points at an internal address no admin allowed."""


class AddressGuard:
    def __init__(self, server_url: str, settings: OAuthClientSettings) -> None:
        own_host = (urlsplit(server_url).hostname or "").lower()
        allowed = frozenset({own_host, *(h.lower() for h in settings.allow_hosts)})
        self.reach = Reach(loopback=settings.allow_loopback, hosts=allowed)

    async def check(self, request: httpx2.Request) -> None:
        """An httpx2 request hook: send the request to its host's checked address, or raise AddressRefused for an
        internal address not allowed."""
        try:
            await pin(request, self.reach)
        except Refused as refused:
            if refused.why is Why.UNRESOLVED:
                raise AddressRefused(f"the OAuth host {refused.host} does not resolve") from None
            raise AddressRefused(
                f"the server's OAuth metadata points at {refused.host}, an internal address; Jarvis does not go there "
                "unless an admin allows that host (JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS)"
            ) from None
