"""What the authorization server's endpoints share: where it is, its stores, the provider, the token minter."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.oauth.server.clients import Clients
from jarvis.aggregator.oauth.server.errors import OAuthError
from jarvis.aggregator.oauth.server.people import People
from jarvis.aggregator.oauth.upstream import Upstream
from jarvis.common.surfaces import PROFILE_PATH_PREFIX, SURFACE_PATHS

# How long each thing lives: a person takes minutes at the provider and on the consent page; a code is redeemed
# at once; a refresh token keeps a client signed in for a month of disuse (each use rotates it).
PENDING_SECONDS = 600
CODE_SECONDS = 60
REFRESH_SECONDS = 30 * 24 * 3600
# Scopes advertised to clients: the surfaces (the grammar allows narrower ones, which a client may ask for too).
ADVERTISED_SCOPES = ("jarvis", "orchestrator", "debug", "servers", "read", "offline_access")
# Scope values of OAuth/OIDC itself, never Jarvis scopes: asked for, they change nothing.
PROTOCOL_SCOPES = frozenset({"offline_access", "openid", "profile", "email"})


class AccessMinter(Protocol):
    def __call__(
        self,
        *,
        issuer: str,
        subject: str,
        audience: str,
        scopes: Sequence[str],
        client_id: str,
        email: str,
        name: str,
        groups: Sequence[str],
    ) -> str: ...


@dataclass
class Deps:
    issuer: Callable[[], Awaitable[str]]  # the public base URL: Jarvis's aggregator_url, else its bind address
    store: OAuthStateGateway
    clients: Clients
    people: People
    upstream: Upstream
    mint: AccessMinter
    access_ttl: int

    async def check_resource(self, resource: str) -> str:
        """`resource` (RFC 8707) when it is one of Jarvis's MCP surfaces, else invalid_target."""
        base = await self.issuer()
        if not resource:
            raise OAuthError("invalid_target", f"send resource: the URL of the MCP surface, e.g. {base}/mcp")
        parts = urlsplit(resource)
        path = parts.path.rstrip("/") or "/"
        same_origin = f"{parts.scheme}://{parts.netloc}" == base and not parts.query and not parts.fragment
        surface = path in SURFACE_PATHS.values() or path == "/mcp"
        profile = path.startswith(PROFILE_PATH_PREFIX) and "/" not in path.removeprefix(PROFILE_PATH_PREFIX)
        if not same_origin or not (surface or profile):
            raise OAuthError(
                "invalid_target",
                f"resource {resource!r} is not an MCP surface of this Jarvis: use {base}/mcp, {base}/mcp/jarvis, "
                f"or another surface under {base}/mcp",
            )
        return f"{base}{path}"
