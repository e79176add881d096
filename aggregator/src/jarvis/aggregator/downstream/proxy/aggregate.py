"""A profile that mixes servers (names prefixed) serves the rest of MCP of every server too, under names that say
whose each thing is: prompts as `<server>__<prompt>` (as tools), resources and resource templates as
`jarvis://<server>/<uri>` (naming.py). Lists are merged from every server, with the strictest caching hint any
server gave; a name or URI is routed to the one server it names, with the server's own name or URI, and nothing
is sent anywhere for a name that routes to no server of the profile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from jarvis.aggregator.downstream.hosting.naming import SEPARATOR, namespaced, namespaced_uri, split_uri
from jarvis.aggregator.downstream.proxy.content import namespaced_prompt
from jarvis.aggregator.downstream.proxy.logs import ServerLogs
from jarvis.aggregator.downstream.proxy.targets import Targets
from jarvis.aggregator.downstream.proxy.versions import for_caller
from jarvis.aggregator.downstream.proxy.watches import ResourceWatches, Watcher
from jarvis.aggregator.tooling.json_types import JsonObject
from jarvis.aggregator.tooling.request import principal_of
from jarvis.common.errors import JarvisError

log = logging.getLogger(__name__)

Params = Callable[[ServerRequestContext[Any]], JsonObject]
_MAX_PAGES = 100  # a server whose cursor never ends cannot hang the listing
_STALE = {"ttlMs": 0, "cacheScope": "private"}


class Aggregate:
    """The handlers of one surface for its prefixed profiles; `params` is a request's params as sent on to a server."""

    def __init__(self, targets: Targets, watches: ResourceWatches, server_logs: ServerLogs, params: Params) -> None:
        self.targets = targets
        self.host = targets.host
        self.watches = watches
        self.server_logs = server_logs
        self.params = params
        # A 2025-era caller's subscriptions are its session's: one watcher per session id, dropped when it watches
        # nothing (unsubscribed, or its session went away and a delivery failed).
        self._sessions: dict[str, Watcher] = {}
        self._methods: dict[str, Callable[[ServerRequestContext[Any], str], Awaitable[JsonObject]]] = {
            "resources/list": self._listing("resources", "uri", "resources"),
            "resources/templates/list": self._listing("resourceTemplates", "uriTemplate", "resources"),
            "prompts/list": self._listing("prompts", "name", "prompts"),
            "resources/read": self._read,
            "prompts/get": self._get_prompt,
            "completion/complete": self._complete,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "logging/setLevel": self._set_level,
        }

    async def answer(self, ctx: ServerRequestContext[Any], target: str, method: str) -> JsonObject:
        handler = self._methods.get(method)
        if handler is None:
            raise MCPError(types.METHOD_NOT_FOUND, f"{method} is not served by profile '{target}'")
        try:
            return for_caller(await handler(ctx, target), ctx.protocol_version)
        except JarvisError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None

    # ------------------------------------------------------------ lists

    def _listing(
        self, key: str, field: str, capability: str
    ) -> Callable[[ServerRequestContext[Any], str], Awaitable[JsonObject]]:
        rename = namespaced if field == "name" else namespaced_uri

        async def merged(ctx: ServerRequestContext[Any], target: str) -> JsonObject:
            params = self.params(ctx)
            if params.pop("cursor", None) is not None:
                raise MCPError(types.INVALID_PARAMS, "invalid cursor: this profile answers its lists in one page")
            servers = self.targets.servers_granted(principal_of(ctx), target)
            pages = await asyncio.gather(
                *(self._pages(server, ctx, ctx.method, key, capability, params) for server in servers),
                return_exceptions=True,
            )
            items: list[JsonObject] = []
            hints: list[JsonObject] = []
            for server, page in zip(servers, pages, strict=True):
                if isinstance(page, BaseException):
                    # A failing server's entries are absent, as its tools are from tools/list; the listing is
                    # then only as fresh as the next try.
                    log.warning(
                        "%s of downstream server %s left out of %s: %s",
                        key,
                        server,
                        ctx.method,
                        page,
                        extra={"server": server, "error": str(page)[:300]},
                    )
                    hints.append(_STALE)
                    continue
                entries, page_hints = page
                items += [{**entry, field: rename(server, entry[field])} for entry in entries]
                hints += page_hints
            return {key: items, **strictest(hints)}

        return merged

    async def _pages(
        self, server: str, ctx: ServerRequestContext[Any], method: str, key: str, capability: str, params: JsonObject
    ) -> tuple[list[JsonObject], list[JsonObject]]:
        """Every entry of one server's list and the caching hints of its pages; nothing for a server without
        the capability (it is not asked)."""
        host = self.host
        connection = await host.host(server).ensure_running(host.options.init_timeout)
        if getattr(connection.capabilities, capability, None) is None:
            return [], []
        entries: list[JsonObject] = []
        hints: list[JsonObject] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            result = await host.forward(
                server, method, {**params, "cursor": cursor} if cursor else dict(params), ctx.protocol_version
            )
            page = result.get(key)
            entries += [e for e in page if isinstance(e, dict)] if isinstance(page, list) else []
            hints.append(result)
            cursor = result.get("nextCursor") if isinstance(result.get("nextCursor"), str) else None
            if not cursor:
                break
        return entries, hints

    # ------------------------------------------------------------ routed requests

    async def _read(self, ctx: ServerRequestContext[Any], target: str) -> JsonObject:
        params = self.params(ctx)
        server, params["uri"] = self.route_uri(ctx, target, params.get("uri"))
        result = await self.host.forward(server, "resources/read", params, ctx.protocol_version)
        contents = result.get("contents")
        if isinstance(contents, list):
            result["contents"] = [
                {**c, "uri": namespaced_uri(server, c["uri"])} if isinstance(c, dict) and "uri" in c else c
                for c in contents
            ]
        return result

    async def _get_prompt(self, ctx: ServerRequestContext[Any], target: str) -> JsonObject:
        params = self.params(ctx)
        server, params["name"] = await self._route_prompt(ctx, target, params.get("name"))
        # An input-required result is relayed untouched; the retry names the same prompt, so reaches the same server.
        result = await self.host.forward(server, "prompts/get", params, ctx.protocol_version)
        return namespaced_prompt(server, result)

    async def _complete(self, ctx: ServerRequestContext[Any], target: str) -> JsonObject:
        params = self.params(ctx)
        ref = dict(params.get("ref") or {})
        if ref.get("type") == "ref/prompt":
            server, ref["name"] = await self._route_prompt(ctx, target, ref.get("name"))
        elif ref.get("type") == "ref/resource":
            server, ref["uri"] = self.route_uri(ctx, target, ref.get("uri"))
        else:
            raise MCPError(types.INVALID_PARAMS, f"unknown completion reference type {ref.get('type')!r}")
        return await self.host.forward(server, "completion/complete", {**params, "ref": ref}, ctx.protocol_version)

    async def _set_level(self, ctx: ServerRequestContext[Any], target: str) -> JsonObject:
        servers = self.targets.servers_granted(principal_of(ctx), target)
        level = (ctx.params or {}).get("level")
        await self.server_logs.set_level(caller_session_id(ctx), ctx.session, servers, level)
        return {}

    def route_uri(self, ctx: ServerRequestContext[Any], target: str, uri: Any) -> tuple[str, str]:
        """(server, the server's URI) of a namespaced URI of `target`'s servers; resource-not-found otherwise
        (also for a server whose resources the caller's token does not grant: it is not told they exist)."""
        split = split_uri(uri) if isinstance(uri, str) else None
        if split is None or split[0] not in self.targets.servers_granted(principal_of(ctx), target):
            # SEP-2164: an unknown resource is invalid params, naming the URI.
            raise MCPError(
                types.INVALID_PARAMS,
                f"Resource not found: {uri!r} names no server of profile '{target}' (its URIs are "
                "jarvis://<server>/<the server's URI>; resources/list shows them)",
                {"uri": uri},
            )
        return split

    async def _route_prompt(self, ctx: ServerRequestContext[Any], target: str, name: Any) -> tuple[str, str]:
        """(server, the server's prompt name) of a prefixed prompt name; invalid params when none matches."""
        servers = self.targets.servers_granted(principal_of(ctx), target)
        for server in sorted(servers, key=len, reverse=True) if isinstance(name, str) else ():
            if not name.startswith(server + SEPARATOR):
                continue
            own = name[len(server) + len(SEPARATOR) :]
            if namespaced(server, own) == name:
                return server, own
            # A long or unusual name was cut and hashed: find it among the server's prompts.
            listing = {k: v for k, v in self.params(ctx).items() if k == "_meta"}
            prompts, _ = await self._pages(server, ctx, "prompts/list", "prompts", "prompts", listing)
            for prompt in prompts:
                if isinstance(prompt.get("name"), str) and namespaced(server, prompt["name"]) == name:
                    return server, prompt["name"]
        raise MCPError(
            types.INVALID_PARAMS, f"unknown prompt {name!r} on profile '{target}'; prompts/list shows its prompts"
        )

    # ------------------------------------------------------------ subscriptions

    async def _subscribe(self, ctx: ServerRequestContext[Any], target: str) -> JsonObject:
        server, uri = self.route_uri(ctx, target, (ctx.params or {}).get("uri"))
        session = caller_session_id(ctx)
        # Sessions whose updates stopped being deliverable watch nothing any more: forget them here.
        self._sessions = {key: known for key, known in self._sessions.items() if known.watching}
        watcher = self._sessions.get(session)
        if watcher is None:
            # Updates go out on the session's standalone stream, which outlives this request.
            watcher = Watcher(namespaced_uri, ctx.session.send_resource_updated)
            self._sessions[session] = watcher
        await self.watches.watch(watcher, server, uri)
        return {}

    async def _unsubscribe(self, ctx: ServerRequestContext[Any], target: str) -> JsonObject:
        server, uri = self.route_uri(ctx, target, (ctx.params or {}).get("uri"))
        session = caller_session_id(ctx)
        watcher = self._sessions.get(session)
        if watcher is not None:
            await self.watches.unwatch(watcher, server, uri)
            if not watcher.watching:
                del self._sessions[session]
        return {}


def caller_session_id(ctx: ServerRequestContext[Any]) -> str:
    """The caller's MCP session (a stateless one has none: its subscriptions end with it, like its requests)."""
    headers = getattr(ctx.request, "headers", None) or {}
    return str(headers.get("mcp-session-id") or id(ctx.session))


def strictest(hints: list[JsonObject]) -> JsonObject:
    """The caching hint that holds for a merged list: the shortest `ttlMs`, and `private` unless every part is
    `public`. A part without a hint promised nothing (immediately stale, private)."""
    if not hints:
        return {}
    ttls = [h.get("ttlMs") for h in hints]
    ttl = min(t if isinstance(t, int) and t >= 0 else 0 for t in ttls)
    public = all(h.get("cacheScope") == "public" for h in hints)
    return {"ttlMs": ttl, "cacheScope": "public" if public else "private"}
