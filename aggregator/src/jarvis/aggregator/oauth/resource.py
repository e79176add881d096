"""Jarvis as an OAuth 2.1 protected resource (issue 31 item 1): each surface's Protected Resource Metadata (RFC 9728),
the challenge its 401s and 403s carry, and the audience-bound access tokens it accepts besides `jv_` tokens.

Metadata is published when tokens are required or sign-in is configured (JARVIS_OIDC_ISSUER); an open loopback
Jarvis answers 404 there, as before. A JWT is accepted only for the surface whose public URL is its `aud` (RFC 8707:
one token, one resource), so a token for /mcp/jarvis is refused at /mcp/orchestrator.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from jarvis.aggregator.oauth import access_tokens
from jarvis.aggregator.oauth.agent_sessions import LiveAgentSessions
from jarvis.aggregator.oauth.agents import RunCredentials
from jarvis.aggregator.oauth.keys import InvalidToken, SigningKeys
from jarvis.aggregator.oauth.standing import StandingCache
from jarvis.aggregator.settings import AggregatorSettings
from jarvis.aggregator.tooling.principal import Principal
from jarvis.common import scopes as scope_rules
from jarvis.common.errors import Unauthenticated

WELL_KNOWN = "/.well-known/oauth-protected-resource"
JV_PREFIX = "jv_"  # Jarvis's own tokens (the registry's SECRET_PREFIX); anything else is taken for a JWT
USER_TOKEN_PREFIX = "user:"  # noqa: S105 - a key prefix, not a secret; a signed-in person's calls share one rate-limit and session key, whatever the client


def needed_scopes(surface: str) -> list[str]:
    """The scopes that reach `surface`, narrowest first (every valid token reaches an open one)."""
    if surface in scope_rules.OPEN_SURFACES:
        return [scope_rules.READ, scope_rules.ADMIN]
    if surface in scope_rules.ADMIN_SURFACES:
        return [scope_rules.ADMIN]
    return [surface, f"{surface}:{scope_rules.READ}", scope_rules.READ, scope_rules.ADMIN]


class ProtectedResource:
    def __init__(
        self,
        base_url: Callable[[], Awaitable[str]],
        keys: SigningKeys | None,
        publish: bool,
        *,
        surface_at: Callable[[str], str | None] = lambda _: None,
        standing: StandingCache | None = None,
        runs: RunCredentials | None = None,
        agent_sessions: LiveAgentSessions | None = None,
    ) -> None:
        self.base_url = base_url
        self.keys = keys  # None: sign-in not configured, only `jv_` tokens exist
        self.publish = publish
        # The surface name a path serves (fixed, a profile or a share), or None.
        self.surface_at = surface_at
        # Each person's standing (disabled, not before), shared through the registry; with sign-in.
        self.standing = standing
        # Scheduled runs' credentials for their schedule's owner (oauth/agents.py); with sign-in.
        self.runs = runs
        # Whether an agent credential's session still runs (oauth/agent_sessions.py); where there is a runtime.
        self.agent_sessions = agent_sessions

    async def issuer(self) -> str:
        return (await self.base_url()).rstrip("/")

    def is_jwt(self, secret: str) -> bool:
        return self.keys is not None and not secret.startswith(JV_PREFIX)

    async def principal(self, secret: str, path: str) -> tuple[Principal, int]:
        """The person a JWT access token for the surface at `path` speaks for, and when the token expires (epoch
        seconds); Unauthenticated(why) otherwise."""
        assert self.keys is not None
        base = await self.issuer()
        try:
            claims = access_tokens.verify(self.keys, secret, issuer=base, audience=base + path.rstrip("/"))
        except InvalidToken as exc:
            raise Unauthenticated(str(exc)) from None
        principal = Principal(
            token_id=USER_TOKEN_PREFIX + claims.subject,
            name=claims.email or claims.name or claims.subject,
            scopes=claims.scopes,
            user=claims.subject,
            issued_at=claims.issued_at,
            via=f"session {claims.session}" if claims.session else f"token {claims.client_id}",
            agent_session=claims.session,
            trace=claims.trace,
        )
        await self.check_current(principal)
        return principal, claims.expires_at

    async def check_current(self, principal: Principal) -> None:
        """Unauthenticated(why) when the person `principal` speaks for is disabled, or was after it was issued, or,
        for an agent's credential, when its session no longer runs. Checked on cached tokens too."""
        if self.standing is not None and principal.user:
            await self.standing.check(principal.user, principal.issued_at)
        if principal.agent_session:
            if self.agent_sessions is None:
                raise Unauthenticated("an agent credential is good only where Jarvis reaches the runtime it runs in")
            await self.agent_sessions.check(principal)

    async def challenge(self, path: str, surface: str) -> str:
        """What a refusal at `path` adds to its WWW-Authenticate: the scope to ask for and where the metadata is, so a
        client can sign in or step up.

        A surface's narrowest scope, except on an open surface (discovery), which reaches what the token's other
        scopes allow: there every scope of its metadata (`read admin`), which sign-in meets with the person's roles
        (decision 0055), so a client gets all the person may do and never more. Clients fall back to the metadata's
        `scopes_supported` without one; naming it here spares those that do not."""
        if not self.publish:
            return ""
        needed = needed_scopes(surface)
        scope = " ".join(needed) if surface in scope_rules.OPEN_SURFACES else needed[0]
        return f'scope="{scope}", resource_metadata="{await self.issuer()}{WELL_KNOWN}{path.rstrip("/")}"'

    def routes(self) -> list[Route]:
        return [Route(WELL_KNOWN, self._metadata), Route(WELL_KNOWN + "/{rest:path}", self._metadata)]

    async def _metadata(self, request: Request) -> Response:
        path = "/" + request.path_params.get("rest", "mcp").strip("/")
        surface = self.surface_at(path) if self.publish else None
        if surface is None:
            return JSONResponse({"error": "not_found", "message": f"no protected resource at {path}"}, 404)
        base = await self.issuer()
        body: dict[str, Any] = {
            "resource": base + path,
            "scopes_supported": needed_scopes(surface),
            "bearer_methods_supported": ["header"],
            "resource_name": f"Jarvis {surface}",
        }
        if self.keys is not None:
            body["authorization_servers"] = [base]
        return JSONResponse(body, headers={"Cache-Control": "max-age=300"})


def signing_keys(settings: AggregatorSettings) -> SigningKeys | None:
    """The keys JWTs are signed and checked with, where sign-in is configured (JARVIS_OIDC_ISSUER)."""
    return SigningKeys.load(settings.signing_keys_dir) if settings.oidc_issuer else None
