"""Server cards (SEP-2127 draft, decision `docs/decisions/0064-server-cards.md`): each surface, profile and share
describes itself at `<its MCP URL>/server-card`, so a registry or a client can tell what it is and how to connect
without connecting.

A card names the endpoint, its version, its streamable HTTP URL (built from the configured public URL, never the
request's Host), the protocol versions the SDK serves, whether a token is needed and where sign-in starts, and its
capabilities in summary; never a tool list, and for a profile never its servers. Cards are public metadata, served
without a token like the OAuth metadata; a profile or share that does not exist is 404.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp.server import Server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from jarvis.aggregator.downstream.proxy.shares import SHARE_PATH, Shares
from jarvis.aggregator.downstream.proxy.surface import ProxySurface
from jarvis.aggregator.surfaces.paths import PROFILE_PATH_PREFIX
from jarvis.aggregator.tooling.tool import Surface

SUFFIX = "/server-card"  # SEP-2127 reserves GET <streamable-http-url>/server-card
SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
MEDIA_TYPE = "application/mcp-server+json"
META = "jarvis"  # the `_meta` prefix of what the draft card has no field for: `jarvis/authorization`, `…/capabilities`
PROTOCOL_VERSIONS = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]
# Public and read-only: any page may read a card (the draft asks for CORS `*`); kept briefly, as profiles change.
HEADERS = {
    "Cache-Control": "public, max-age=60",
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET",
    "Access-Control-Allow-Headers": "Content-Type",
}
DESCRIPTIONS = {
    "discovery": "Finds, loads and calls the tools of every MCP server Jarvis hosts",
    "jarvis": "Manages Jarvis: MCP servers, profiles, client configs, config and projects",
    "orchestrator": "Runs projects in containers and agent sessions in their workspaces",
    "debug": "Debugs AWS, LangSmith, Jira and projects through one debug tool",
    "admin": "Administers the people who sign in to Jarvis and the roles that give them scopes",
}
_NOT_NAME = re.compile(r"[^a-zA-Z0-9._-]+")


@dataclass(frozen=True)
class CardAuth:
    """What a card says of authorization, as Jarvis is configured."""

    token_required: bool  # on Jarvis's own surfaces and profiles (a share always takes its token)
    metadata_path: str | None  # the RFC 9728 well-known prefix, where that metadata is published
    sign_in: bool  # Jarvis is its own authorization server (an OpenID provider is configured)


class ServerCards:
    def __init__(self, base_url: Callable[[], Awaitable[str]], version: str, auth: CardAuth) -> None:
        self.base_url = base_url
        self.version = version
        self.auth = auth

    def routes(
        self, surfaces: list[tuple[Surface, Server[Any]]], profiles: ProxySurface, shares: ProxySurface, active: Shares
    ) -> list[Route]:
        """The card routes of Jarvis's own surfaces (each with its MCP server), the profiles and the shares."""
        own = [Route(s.path + SUFFIX, self._surface(s, server), methods=["GET"]) for s, server in surfaces]
        return [
            *own,
            Route(PROFILE_PATH_PREFIX + "{name}" + SUFFIX, self._profile(profiles), methods=["GET"]),
            Route(SHARE_PATH.format(server="{name}") + SUFFIX, self._share(shares, active), methods=["GET"]),
        ]

    def _surface(self, surface: Surface, server: Server[Any]) -> Callable[[Request], Awaitable[Response]]:
        description = DESCRIPTIONS.get(surface.name) or _first_line(surface.instructions) or f"Jarvis {surface.name}"

        async def card(_: Request) -> Response:
            return await self._answer(
                f"jarvis-{surface.name}",
                f"Jarvis {surface.name}",
                description,
                surface.path,
                server,
                self.auth.token_required,
            )

        return card

    def _profile(self, profiles: ProxySurface) -> Callable[[Request], Awaitable[Response]]:
        async def card(request: Request) -> Response:
            name = request.path_params["name"]
            if not profiles.exists(name):
                # Made through another worker or replica a moment ago? One bounded re-read (reread.py) answers.
                await profiles.host.refresh_after_miss()
                if not profiles.exists(name):
                    return _missing("profile", name)
            # Neither the profile's servers nor their number: what it serves is for whoever may call it.
            return await self._answer(
                f"jarvis-profile-{name}",
                f"Jarvis profile {name}",
                "A Jarvis profile: the tools of the MCP servers it groups, through one endpoint",
                PROFILE_PATH_PREFIX + name,
                profiles.server,
                self.auth.token_required,
            )

        return card

    def _share(self, shares: ProxySurface, active: Shares) -> Callable[[Request], Awaitable[Response]]:
        async def card(request: Request) -> Response:
            name = request.path_params["name"]
            # An installed server that is not shared has no card: only a share's link names it.
            if await active.active(name) is None or not shares.exists(name):
                return _missing("share", name)
            return await self._answer(
                f"jarvis-share-{name}",
                f"{name}, shared by Jarvis",
                "One MCP server shared through Jarvis; its link's token is required",
                SHARE_PATH.format(server=name),
                shares.server,
                True,
            )

        return card

    async def _answer(
        self, name: str, title: str, description: str, path: str, server: Server[Any], token_required: bool
    ) -> Response:
        base = (await self.base_url()).rstrip("/")
        remote: dict[str, Any] = {
            "type": "streamable-http",
            "url": base + path,
            "supportedProtocolVersions": PROTOCOL_VERSIONS,
        }
        authorization: dict[str, Any] = {"required": token_required}
        if token_required:
            remote["headers"] = [
                {
                    "name": "Authorization",
                    "description": "Bearer <token>",
                    "isRequired": True,
                    "isSecret": True,
                }
            ]
            authorization["schemes"] = ["bearer"]
        if self.auth.metadata_path is not None:
            authorization["resourceMetadata"] = base + self.auth.metadata_path + path
        if self.auth.sign_in:
            authorization["authorizationServers"] = [base]
        capabilities = server.create_initialization_options().capabilities.model_dump(
            by_alias=True, exclude_none=True, mode="json"
        )
        if not capabilities.get("extensions"):
            capabilities.pop("extensions", None)
        body = {
            "$schema": SCHEMA,
            "name": f"{namespace(base)}/{_NOT_NAME.sub('-', name)[:150]}",
            "version": self.version,
            "title": title[:100],
            "description": description[:100],
            "remotes": [remote],
            "_meta": {
                f"{META}/authorization": authorization,
                f"{META}/capabilities": capabilities,
            },
        }
        return JSONResponse(body, headers=HEADERS, media_type=MEDIA_TYPE)


def namespace(base_url: str) -> str:
    """The card name's reverse-DNS namespace: the public URL's host reversed (`jarvis.example.com` ->
    `com.example.jarvis`); an address or a one-label host (`localhost`) as it is."""
    host = (urlsplit(base_url).hostname or "localhost").strip("[]")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        host = ".".join(reversed(host.split(".")))
    return re.sub(r"[^a-zA-Z0-9.-]+", "-", host) or "localhost"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:100] if text.strip() else ""


def _missing(kind: str, name: str) -> Response:
    # Not kept: a profile made a moment later has its card at once.
    headers = {**HEADERS, "Cache-Control": "no-store"}
    return JSONResponse({"error": "not_found", "message": f"no {kind} named '{name}'"}, 404, headers=headers)
