"""Puts the authorization server together from the aggregator's settings: its stores, the provider, and the shared
signing keys its access tokens are signed with (oauth/keys.py, oauth/access_tokens.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from prometheus_client import Counter

from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.oauth import access_tokens
from jarvis.aggregator.oauth.keys import SigningKeys
from jarvis.aggregator.oauth.server.cimd import MetadataDocuments
from jarvis.aggregator.oauth.server.clients import Clients
from jarvis.aggregator.oauth.server.deps import Deps
from jarvis.aggregator.oauth.server.people import People
from jarvis.aggregator.oauth.server.routes import AuthorizationServer
from jarvis.aggregator.oauth.upstream import GROUPS_CLAIM, Upstream, UpstreamConfig
from jarvis.aggregator.ratelimit import Limit, RateLimiter
from jarvis.aggregator.settings import AggregatorSettings


def build_authorization_server(
    settings: AggregatorSettings,
    store: OAuthStateGateway,
    issuer: Callable[[], Awaitable[str]],
    keys: SigningKeys | None,
    refused: Counter,
) -> AuthorizationServer | None:
    """The server the settings describe, or None when sign-in is not configured (JARVIS_OIDC_ISSUER unset).

    `keys` are the protected resource's: one set per process, so what this server signs the gate checks; `refused`
    counts registrations and metadata document fetches refused by their rate limit (jarvis_rate_limited, surface
    "oauth"); `store` is the registry's sign-in records, which the aggregator's people admin reads and writes too
    (one client, closed by its owner)."""
    if not settings.oidc_issuer or keys is None:
        return None
    ttl = settings.oauth_access_token_ttl_seconds
    upstream = Upstream(
        UpstreamConfig(
            settings.oidc_issuer,
            settings.oidc_client_id,
            settings.oidc_secret(),
            settings.oidc_scopes,
            settings.oidc_groups_claim.strip() or GROUPS_CLAIM,
        )
    )

    async def public_base() -> str:
        # The issuer is compared character for character by clients (RFC 8414 §3.3): no trailing slash, ever.
        return (await issuer()).rstrip("/")

    per_second = settings.oauth_register_per_minute / 60
    # Registrations and metadata document fetches: what a stranger makes Jarvis do for a new client, each limited
    # per client address with its own bucket at the same rate.
    per_address = RateLimiter(Limit(per_second, settings.oauth_register_burst), {}, refused)
    deps = Deps(
        issuer=public_base,
        store=store,
        clients=Clients(store, MetadataDocuments(settings.oauth_cimd_allow_loopback, per_address)),
        people=People(store),
        upstream=upstream,
        mint=partial(access_tokens.issue, keys, ttl_seconds=ttl),
        access_ttl=ttl,
    )
    return AuthorizationServer(deps, keys.jwks, per_address)
