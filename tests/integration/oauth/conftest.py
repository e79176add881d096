"""The authorization server over real HTTP (uvicorn on loopback), its state in a real registry over gRPC (port 0),
its sign-in federated to a real OpenID provider (npm oidc-provider). Access tokens are signed
with the shared SigningKeys and checked here with access_tokens.verify, so these tests need nothing of the gate."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.oauth import access_tokens
from jarvis.aggregator.oauth.keys import InvalidToken, SigningKeys
from jarvis.aggregator.oauth.server.cimd import MetadataDocuments
from jarvis.aggregator.oauth.server.clients import Clients
from jarvis.aggregator.oauth.server.deps import Deps
from jarvis.aggregator.oauth.server.people import People
from jarvis.aggregator.oauth.server.routes import AuthorizationServer
from jarvis.aggregator.oauth.upstream import Upstream, UpstreamConfig
from jarvis.aggregator.ratelimit import Limit, RateLimiter
from jarvis.common.grpc_server import create_server
from jarvis.registry.server import open_registry, registry_bindings
from jarvis.registry.settings import RegistrySettings
from tests.support.http_fake import serve_app
from tests.support.oidc_provider import oidc_provider
from tests.support.stack import free_port

PRM_PATH = "/.well-known/oauth-protected-resource/mcp/jarvis"


def protected_resource(base: str, keys: SigningKeys) -> list[Route]:
    """A stand-in for item 1's protected resource (its metadata and a route checking the token), so the SDK's OAuth
    client can be driven against this server alone: it answers who the token is for."""

    async def metadata(_: Request) -> Response:
        return JSONResponse(
            {"resource": f"{base}/mcp/jarvis", "authorization_servers": [base], "scopes_supported": ["jarvis"]}
        )

    async def resource(request: Request) -> Response:
        kind, _, token = request.headers.get("authorization", "").partition(" ")
        try:
            if kind.lower() != "bearer":
                raise InvalidToken("no bearer token")
            claims = access_tokens.verify(keys, token, issuer=base, audience=f"{base}/mcp/jarvis")
        except InvalidToken:
            challenge = f'Bearer resource_metadata="{base}{PRM_PATH}"'
            return JSONResponse({"error": "invalid_token"}, status_code=401, headers={"WWW-Authenticate": challenge})
        return JSONResponse({"sub": claims.subject, "scope": " ".join(claims.scopes)})

    return [Route(PRM_PATH, metadata), Route("/mcp/jarvis", resource, methods=["GET", "POST"])]


class LazyServer:
    """Builds the server in uvicorn's own event loop, where its gRPC channel must live."""

    def __init__(self, registry_target: str, upstream: UpstreamConfig, base: str, keys: SigningKeys) -> None:
        self.registry_target, self.upstream, self.base, self.keys = registry_target, upstream, base, keys
        self.app: object = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:
            store = OAuthStateGateway(self.registry_target)

            async def issuer() -> str:
                return self.base

            deps = Deps(
                issuer=issuer,
                store=store,
                clients=Clients(store, MetadataDocuments(allow_loopback=True)),
                people=People(store),
                upstream=Upstream(self.upstream),
                mint=partial(access_tokens.issue, self.keys, ttl_seconds=300),
                access_ttl=300,
            )
            off = RateLimiter(Limit(), {}, Counter("refused", "", ["surface", "reason"], registry=CollectorRegistry()))
            routes = AuthorizationServer(deps, self.keys.jwks, off).routes() + protected_resource(self.base, self.keys)
            self.app = Starlette(routes=routes)
        await self.app(scope, receive, send)  # type: ignore[operator]


@dataclass
class Stack:
    base: str
    store_target: str
    keys: SigningKeys


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp: Path = tmp_path_factory.mktemp("oauth")
    registry = open_registry(
        RegistrySettings(data_dir=tmp / "data", home=tmp, database_url=f"sqlite:///{tmp / 'r.db'}")
    )
    running = create_server(registry_bindings(registry, [tmp]), "127.0.0.1:0")
    from jarvis.registry.domain.oauth_records import OAuthRecord

    registry.oauth.put(OAuthRecord("role", "developers", "", '{"groups": ["dev"], "scopes": ["jarvis", "read"]}', 0))
    registry.oauth.put(OAuthRecord("role", "operators", "", '{"groups": ["ops"], "scopes": ["orchestrator"]}', 0))
    keys = SigningKeys.load(tmp / "keys")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    try:
        with oidc_provider([f"{base}/oauth/callback"]) as provider:
            config = UpstreamConfig(provider.issuer, provider.client_id, provider.client_secret)
            with serve_app(LazyServer(f"127.0.0.1:{running.port}", config, base, keys), port=port):
                yield Stack(base, f"127.0.0.1:{running.port}", keys)
    finally:
        running.stop(0)
        registry.close()
