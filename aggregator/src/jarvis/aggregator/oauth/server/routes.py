"""The authorization server's HTTP endpoints (RFC 8414 metadata, RFC 7591 registration, authorize, the provider's
callback, consent, token, RFC 7009 revocation, JWKS), mounted beside the MCP surfaces when sign-in is configured.

The gate passes these paths through untouched: they are how a caller without a token gets one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from jarvis.aggregator.oauth.server.browser import CALLBACK_PATH
from jarvis.aggregator.oauth.server.deps import ADVERTISED_SCOPES, Deps
from jarvis.aggregator.oauth.server.errors import NO_STORE, OAuthError
from jarvis.aggregator.oauth.server.flow import Flow
from jarvis.aggregator.oauth.server.tokens import Tokens
from jarvis.aggregator.ratelimit import RateLimiter
from jarvis.common.errors import JarvisError

METADATA_PATH = "/.well-known/oauth-authorization-server"
REGISTER = "oauth_register"  # the rate limiter's "tool": registrations are limited per client address
_MAX_REGISTRATION_BYTES = 16 * 1024

Endpoint = Callable[[Request], Awaitable[Response]]


def _guarded(endpoint: Endpoint) -> Endpoint:
    """A backend outage (the registry down) is an OAuth error saying so, never a 500."""

    async def run(request: Request) -> Response:
        try:
            return await endpoint(request)
        except OAuthError as refused:
            return refused.json()
        except JarvisError:
            return OAuthError(
                "temporarily_unavailable", "Jarvis cannot reach its registry to complete this; try again shortly", 503
            ).json()

    return run


class AuthorizationServer:
    def __init__(self, deps: Deps, jwks: Callable[[], dict[str, Any]], registrations: RateLimiter) -> None:
        self.deps = deps
        self.jwks = jwks
        self.registrations = registrations  # per client address: a stranger may register, but not a thousand times
        self.flow = Flow(deps)
        self.tokens = Tokens(deps)

    async def metadata(self, _: Request) -> Response:
        issuer = await self.deps.issuer()
        return JSONResponse(
            {
                "issuer": issuer,
                "authorization_endpoint": f"{issuer}/oauth/authorize",
                "token_endpoint": f"{issuer}/oauth/token",
                "registration_endpoint": f"{issuer}/oauth/register",
                "revocation_endpoint": f"{issuer}/oauth/revoke",
                "jwks_uri": f"{issuer}/oauth/jwks.json",
                "response_types_supported": ["code"],
                "response_modes_supported": ["query"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
                "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
                "scopes_supported": list(ADVERTISED_SCOPES),
                "authorization_response_iss_parameter_supported": True,
                "client_id_metadata_document_supported": self.deps.clients.cimd is not None,
            }
        )

    async def register(self, request: Request) -> Response:
        address = request.client.host if request.client else ""
        refusal = self.registrations.check(address, "oauth", REGISTER)
        if refusal is not None:
            limit = self.registrations.limit_for(REGISTER)
            wait = math.ceil(refusal.retry_after)
            refused = OAuthError(
                "temporarily_unavailable",
                f"too many client registrations from {address}: at most {limit.per_second * 60:g} a minute (bursts "
                f"of {limit.burst}); retry after {wait} s, or reuse the client_id you registered",
                429,
            ).json()
            refused.headers["Retry-After"] = str(wait)
            return refused
        raw = await request.body()
        if len(raw) > _MAX_REGISTRATION_BYTES:
            return OAuthError("invalid_client_metadata", "the registration request is larger than 16 KiB").json()
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            return OAuthError("invalid_client_metadata", "send the client's metadata as a JSON object").json()
        return JSONResponse(await self.deps.clients.register(body), status_code=201, headers=NO_STORE)

    async def keys(self, _: Request) -> Response:
        return JSONResponse(self.jwks(), headers={"Cache-Control": "max-age=300"})

    def routes(self) -> list[Route]:
        endpoints: list[tuple[str, Endpoint, list[str]]] = [
            (METADATA_PATH, self.metadata, ["GET"]),
            ("/oauth/register", self.register, ["POST"]),
            ("/oauth/authorize", self.flow.authorize, ["GET"]),
            (CALLBACK_PATH, self.flow.callback, ["GET"]),
            ("/oauth/consent", self.flow.consent, ["POST"]),
            ("/oauth/token", self.tokens.token, ["POST"]),
            ("/oauth/revoke", self.tokens.revoke, ["POST"]),
            ("/oauth/jwks.json", self.keys, ["GET"]),
        ]
        return [Route(path, _guarded(endpoint), methods=methods) for path, endpoint, methods in endpoints]
