"""The person's claims as OpenID Connect gives them (issue 48 item 1): the ID token merged with the provider's
userinfo answer, which must name the same subject; groups read where JARVIS_OIDC_GROUPS_CLAIM says; a warning that
names claims, never values, when group roles can never match.

A small provider over real HTTP (uvicorn on loopback) stands in for the team's: what it answers is what each test
needs, including what a real provider would never send (a userinfo answer for someone else)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from jarvis.aggregator.gateways.oauth_state import Stored
from jarvis.aggregator.oauth.server.people import People
from jarvis.aggregator.oauth.upstream import Identity, Upstream, UpstreamConfig, UpstreamError, claim_at
from tests.support.http_fake import serve_app

NONCE = "nonce-1"
CALLBACK = "http://127.0.0.1:9/oauth/callback"


@dataclass
class FakeProvider:
    """What the provider puts in the ID token and in userinfo, set per test; `bearers` are the tokens userinfo saw."""

    id_token: dict[str, Any] = field(default_factory=dict)
    userinfo: dict[str, Any] | None = field(default_factory=dict)  # None: no userinfo_endpoint in its metadata
    bearers: list[str] = field(default_factory=list)
    issuer: str = ""


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    fake = FakeProvider()
    key = RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)

    async def discovery(_: Request) -> Response:
        meta = {
            "issuer": fake.issuer,
            "authorization_endpoint": f"{fake.issuer}/auth",
            "token_endpoint": f"{fake.issuer}/token",
            "jwks_uri": f"{fake.issuer}/jwks",
        }
        if fake.userinfo is not None:
            meta["userinfo_endpoint"] = f"{fake.issuer}/me"
        return JSONResponse(meta)

    async def token(_: Request) -> Response:
        now = int(time.time())
        claims = {"iss": fake.issuer, "aud": "jarvis", "exp": now + 60, "iat": now, "nonce": NONCE, **fake.id_token}
        id_token = jwt.encode({"alg": "RS256", "kid": "k1"}, claims, key)
        return JSONResponse({"access_token": "at-1", "token_type": "Bearer", "id_token": id_token})

    async def me(request: Request) -> Response:
        fake.bearers.append(request.headers.get("authorization", ""))
        return JSONResponse(fake.userinfo)

    async def jwks(_: Request) -> Response:
        return JSONResponse({"keys": [key.as_dict(private=False)]})

    routes = [
        Route("/.well-known/openid-configuration", discovery),
        Route("/token", token, methods=["POST"]),
        Route("/me", me),
        Route("/jwks", jwks),
    ]
    with serve_app(Starlette(routes=routes)) as base:
        fake.issuer = base
        yield fake


def sign_in(provider: FakeProvider, groups_claim: str = "groups") -> Identity:
    upstream = Upstream(UpstreamConfig(provider.issuer, "jarvis", "secret", groups_claim=groups_claim))
    return anyio.run(upstream.exchange, CALLBACK, "code-1", "v" * 43, NONCE)


def test_claims_only_in_userinfo_are_read_with_the_access_token(provider: FakeProvider) -> None:
    """oidc-provider's default (conformIdTokenClaims): the ID token holds `sub`, userinfo the rest."""
    provider.id_token = {"sub": "bob"}
    provider.userinfo = {"sub": "bob", "email": "bob@example.test", "name": "Bob", "groups": ["ops", "qa"]}
    identity = sign_in(provider)
    assert identity.subject == "bob"
    assert (identity.email, identity.name, identity.groups) == ("bob@example.test", "Bob", ("ops", "qa"))
    assert provider.bearers == ["Bearer at-1"]


def test_a_userinfo_answer_for_another_subject_refuses_the_sign_in(provider: FakeProvider) -> None:
    provider.id_token = {"sub": "bob"}
    provider.userinfo = {"sub": "mallory", "groups": ["admins"]}
    with pytest.raises(UpstreamError, match="userinfo answer names another subject than its ID token"):
        sign_in(provider)
    provider.userinfo = {"groups": ["admins"]}  # no subject at all is not the same subject either
    with pytest.raises(UpstreamError, match="another subject"):
        sign_in(provider)


def test_without_a_userinfo_endpoint_the_id_token_is_all(provider: FakeProvider) -> None:
    provider.id_token = {"sub": "bob", "email": "bob@example.test", "groups": "ops"}
    provider.userinfo = None
    identity = sign_in(provider)
    assert (identity.email, identity.groups) == ("bob@example.test", ("ops",))  # a single string is one group
    assert provider.bearers == []


@pytest.mark.parametrize(
    ("claim", "claims"),
    [
        ("realm_access.roles", {"realm_access": {"roles": ["ops"]}}),  # Keycloak's realm roles
        ("resource_access.jarvis.app.roles", {"resource_access": {"jarvis.app": {"roles": ["ops"]}}}),  # a client id
        ("https://example.com/groups", {"https://example.com/groups": ["ops"]}),  # Auth0's namespaced claim
        ("roles", {"roles": "ops"}),  # Entra ID's app roles, here a single string
    ],
)
def test_groups_are_read_where_the_groups_claim_says(
    provider: FakeProvider, claim: str, claims: dict[str, Any]
) -> None:
    provider.id_token = {"sub": "bob"}
    provider.userinfo = {"sub": "bob", "groups": ["not-these"], **claims}
    assert sign_in(provider, claim).groups == ("ops",)


def test_claim_at_prefers_a_claim_named_as_is_and_ignores_what_is_not_there() -> None:
    claims = {"a.b": 1, "a": {"b": 2, "c": {"d": 3}}}
    assert claim_at(claims, "a.b") == 1
    assert claim_at(claims, "a.c.d") == 3
    assert claim_at(claims, "a.x") is None
    assert claim_at(claims, "a.b.c") is None


class MemoryStore:
    """The OAuth state store, as far as People's sign-in record uses it."""

    def __init__(self, roles: dict[str, dict[str, Any]]) -> None:
        self.records = {("role", name): body for name, body in roles.items()}

    async def get(self, kind: str, key: str) -> Stored | None:
        body = self.records.get((kind, key))
        return Stored(key, body, "", False) if body is not None else None

    async def put(self, kind: str, key: str, body: dict[str, Any]) -> None:
        self.records[(kind, key)] = body

    async def list(self, kind: str) -> list[Stored]:
        return [Stored(k, b, "", False) for (t, k), b in self.records.items() if t == kind]


def test_a_sign_in_without_groups_where_roles_name_groups_logs_the_claim_names_once(
    provider: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    provider.id_token = {"sub": "bob"}
    provider.userinfo = {"sub": "bob", "email": "bob@example.test", "realm_access": {"roles": ["secret-group"]}}
    identity = sign_in(provider)  # looked for at `groups`, the default
    assert identity.groups == ()
    people = People(MemoryStore({"developers": {"groups": ["dev"], "scopes": ["jarvis"]}}))  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="jarvis.aggregator.oauth.server.people"):
        anyio.run(people.signed_in, identity)
    (warning,) = caplog.records
    message = warning.getMessage()
    assert "'groups'" in message
    assert "JARVIS_OIDC_GROUPS_CLAIM" in message
    assert "realm_access" in message
    assert "email" in message
    assert "secret-group" not in message
    assert "bob@example.test" not in message
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jarvis.aggregator.oauth.server.people"):
        anyio.run(people.signed_in, sign_in(provider, "realm_access.roles"))
    assert caplog.records == []  # found where the claim now says: nothing to warn about
