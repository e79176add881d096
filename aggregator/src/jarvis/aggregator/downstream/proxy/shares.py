"""Shares: one installed server exposed at `/share/<name>/mcp` with a token valid for that share only.

A share *is* its token in the registry: a token named `share:<server>` whose only scope is
`share:<server>`. So shares survive restarts and every replica sees the same ones, and `stop`
revokes the token. Each replica also drops a stopped share from memory at once, so the old token
stops working here immediately rather than after the token cache expires.

Use counts go through the usage pipeline under the pseudo-tool `share:<token id>` (actions
`request` and `tools/call`): every replica ships its counts to the registry, so `list` shows the
uses a share had on all replicas, and a share started again (a new token) starts from zero.

A share may also be published through a tunnel (`tunnel=ssh://user@host:port`) when Jarvis's own
listener cannot be reached from outside: see `jarvis.aggregator.tunnel`. The token is required there too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from jarvis.aggregator.downstream.hosting.reread import RereadOnMiss
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.tunnel.manager import Tunnels
from jarvis.aggregator.tunnel.spec import check_remote_port, parse_target
from jarvis.aggregator.usage import UsageRecorder
from jarvis.common.errors import FailedPrecondition, JarvisError, NotFound

PREFIX = "share:"
SHARE_PATH = "/share/{server}/mcp"
REQUEST, TOOL_CALL = "request", "tools/call"  # the usage actions a share counts
_REFRESH_SECONDS = 2.0


@dataclass
class Share:
    server: str
    token_id: str
    created_at: datetime | None
    expires_at: datetime | None

    @property
    def usage_key(self) -> str:
        return f"{PREFIX}{self.token_id}"

    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= datetime.now(UTC)


def _time(stamp: str | None) -> datetime | None:
    return datetime.fromisoformat(stamp) if stamp is not None else None


class Shares:
    def __init__(self, registry: RegistryGateway, usage: UsageRecorder, base_url: str, tunnels: Tunnels) -> None:
        self.registry = registry
        self.usage = usage
        self.fallback_base_url = base_url
        self.tunnels = tunnels
        self._active: dict[str, Share] = {}
        self._refreshed = 0.0
        # Started on another replica since the last read, perhaps a moment ago: a link handed out and used at once
        # must not get "not found" for up to _REFRESH_SECONDS.
        self._misses = RereadOnMiss(lambda: self.refresh(force=True))

    def url(self, server: str, base_url: str) -> str:
        return base_url.rstrip("/") + SHARE_PATH.format(server=server)

    async def base_url(self) -> str:
        """Where clients reach this aggregator: `aggregator_url` when configured, else the bind address."""
        reg = self.registry
        try:
            entry = await reg.get_config("aggregator_url", cached=True)
        except JarvisError:
            return self.fallback_base_url
        return str(entry.value) if not entry.default else self.fallback_base_url

    async def refresh(self, force: bool = False) -> None:
        """Read the active shares from the registry's tokens (so other replicas' shares count too)."""
        if not force and time.monotonic() - self._refreshed < _REFRESH_SECONDS:
            return
        began = time.monotonic()
        reg = self.registry
        tokens = await reg.list_tokens()
        active: dict[str, Share] = {}
        for token in tokens:
            server = token.name.removeprefix(PREFIX)
            if not token.name.startswith(PREFIX) or list(token.scopes) != [f"{PREFIX}{server}"]:
                continue
            share = Share(
                server,
                token.id,
                _time(token.created_at),
                _time(token.expires_at),
            )
            if not share.expired():
                active[server] = share
        self._active, self._refreshed = active, time.monotonic()
        self._misses.read_began(began)
        for server in self.tunnels.servers():
            if server not in active:  # expired, or stopped on another replica: nothing to forward to
                await self.tunnels.close(server)

    async def active(self, server: str) -> Share | None:
        await self.refresh()
        share = self._active.get(server)
        if share is None:
            await self._misses.after_miss()
            share = self._active.get(server)
        return None if share is None or share.expired() else share

    def count(self, share: Share, action: str, ok: bool = True, latency_ms: float = 0.0) -> None:
        """One use of `share` (a request reaching it, or a tool call through it), shipped with the usage."""
        self.usage.record(share.usage_key, action, ok, latency_ms)

    def count_call(self, server: str, ok: bool, latency_ms: float) -> None:
        share = self._active.get(server)
        if share is not None:
            self.count(share, TOOL_CALL, ok, latency_ms)

    async def _uses(self, shares: list[Share]) -> dict[str, dict[str, int]]:
        """Requests and tool calls per share, from every replica (this one's pending counts shipped first)."""
        await self.usage.flush()
        reg = self.registry
        uses: dict[str, dict[str, int]] = {}
        for share in shares:
            stats = await reg.usage(share.usage_key)
            calls = {stat.action: stat.calls for stat in stats}
            uses[share.token_id] = {"requests": calls.get(REQUEST, 0), "tool_calls": calls.get(TOOL_CALL, 0)}
        return uses

    async def start(
        self,
        server: str,
        expires_in: int | None,
        tunnel: str = "none",
        remote_port: int | None = None,
        host_key: str | None = None,
    ) -> dict[str, Any]:
        target, port = parse_target(tunnel), check_remote_port(remote_port)
        reg = self.registry
        await reg.get_server(server)  # a typo gets "not installed"
        await self.refresh(force=True)
        if server in self._active:
            raise FailedPrecondition(
                f"'{server}' is already shared (token {self._active[server].token_id}); "
                "stop it first to issue a new token"
            )
        if target is not None:
            await self.tunnels.check_trust(target, host_key)  # before any token exists
        if expires_in is None:
            entry = await reg.get_config("share.default_expiry_seconds", cached=True)
            expires_in = int(entry.value)
        created = await reg.create_token(f"{PREFIX}{server}", [f"{PREFIX}{server}"], expires_in)
        token = created.token
        self._active[server] = Share(server, token.id, _time(token.created_at), _time(token.expires_at))
        share = self._active[server]
        started = {
            "url": self.url(server, await self.base_url()),
            "token": created.secret,
            "token_id": token.id,
            "expires_at": share.expires_at,
            "header": "Authorization: Bearer <token>",
            "note": "the token is shown once and only reaches this share; jarvis_share action=stop revokes it",
        }
        if target is None:
            return started
        try:
            return {**started, **(await self.tunnels.open(server, SHARE_PATH.format(server=server), target, port))}
        except BaseException:
            await self.stop(server)  # no token outlives a tunnel that could not be set up
            raise

    async def stop(self, server: str) -> dict[str, Any]:
        await self.refresh(force=True)
        share = self._active.pop(server, None)
        if share is None:
            raise NotFound(f"'{server}' is not shared; jarvis_share action=list shows the active shares")
        closed = await self.tunnels.close(server)
        reg = self.registry
        await reg.revoke_token(share.token_id)
        return {
            "stopped": server,
            "revoked_token": share.token_id,
            "tunnel_closed": closed,
            **(await self._uses([share]))[share.token_id],
        }

    async def listing(self) -> list[dict[str, Any]]:
        await self.refresh(force=True)
        base = await self.base_url()
        shares = sorted(self._active.values(), key=lambda s: s.server)
        uses = await self._uses(shares)
        return [
            {
                "server": s.server,
                "url": self.url(s.server, base),
                "created_at": s.created_at,
                "expires_at": s.expires_at,
                "token_id": s.token_id,
                **uses[s.token_id],
                **self.tunnels.view(s.server),
            }
            for s in shares
        ]
