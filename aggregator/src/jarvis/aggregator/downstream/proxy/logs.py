"""`logging/setLevel` on a profile or share, and the log messages of its servers relayed to the caller.

Jarvis holds one session per server for every caller, so a server's log level is not one caller's to set and its
log messages are not addressed to one caller. A 2025-era caller's `logging/setLevel` on a profile or share records
the level for its session and sets each of the profile's servers that declare logging (those its token grants)
to the most verbose level any such caller asked for; each message a server then sends, outside a call an
interactive server relays to its own caller, reaches every session that asked for that server at or above the
message's level, its logger prefixed `<server>/` on a prefixed profile so the caller can tell whose it is (a share
or an unprefixed profile stands for one server: its lines come as the server wrote them). A server that refuses the
level costs the caller nothing: its messages stay at the server's own level, and the warning in Jarvis's log names
it. (A 2026-07-28 request carries its log level in `_meta`, which goes to the server the request is routed to; a
2025-era caller's level goes the same way to a server reached in 2026-07-28 only, which has no `logging/setLevel`.)
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.tooling.background import Background

log = logging.getLogger(__name__)

LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOG_MESSAGE = "notifications/message"
MAX_LISTENERS = 10_000


@dataclass(eq=False)
class _Listener:
    session: ServerSession
    servers: tuple[str, ...]
    level: str
    prefixed: bool = True  # on a surface that mixes servers, each line's logger names its server


class ServerLogs:
    def __init__(self, host: DownstreamHost) -> None:
        self.host = host
        # By the caller's MCP session id, oldest first: a session that ends says nothing, so the oldest go beyond
        # the cap the proxy keeps for its sessions.
        self._listeners: OrderedDict[str, _Listener] = OrderedDict()
        self._background = Background()
        host.on_notice(self._heard)

    async def close(self) -> None:
        """Wait for the deliveries still under way."""
        await self._background.close()

    async def set_level(
        self, session_id: str, session: ServerSession, servers: tuple[str, ...], level: Any, *, prefixed: bool = True
    ) -> None:
        """Record `session`'s level for `servers` and set it on each that declares logging; refusals are logged.
        `prefixed` off: the surface stands for one server, whose lines reach the session as the server wrote them."""
        if level not in LEVELS:
            raise MCPError(types.INVALID_PARAMS, f"unknown log level {level!r}; one of {', '.join(LEVELS)}")
        self._keep(session_id, _Listener(session, servers, level, prefixed))
        outcomes = await asyncio.gather(*(self._set(server) for server in servers), return_exceptions=True)
        for server, outcome in zip(servers, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                log.warning(
                    "logging/setLevel of downstream server %s failed: %s; its log messages keep its own level",
                    server,
                    outcome,
                    extra={"server": server, "error": str(outcome)[:300]},
                )

    def _keep(self, session_id: str, listener: _Listener) -> None:
        self._listeners[session_id] = listener
        self._listeners.move_to_end(session_id)
        while len(self._listeners) > MAX_LISTENERS:
            self._listeners.popitem(last=False)

    def level_for(self, session_id: str | None, server: str) -> str | None:
        """The level a 2025-era session set for `server`: what its requests to a server reached in 2026-07-28 only
        carry in `_meta` (such a server has no `logging/setLevel`, and sends a call's lines on the call's stream)."""
        listener = self._listeners.get(session_id) if session_id is not None else None
        return listener.level if listener is not None and server in listener.servers else None

    async def _set(self, server: str) -> None:
        connection = await self.host.host(server).ensure_running(self.host.options.init_timeout)
        if connection.capabilities is None or connection.capabilities.logging is None:
            return  # it sends no log messages: nothing to set
        if self.host.asks_in_rounds((server,)):
            return  # 2026-07-28 only: the level rides on each of the session's requests (level_for)
        await self.host.forward(server, "logging/setLevel", {"level": self._level_for(server)})

    def _level_for(self, server: str) -> str:
        """The most verbose level any session asked of `server`: each session is filtered to its own on delivery."""
        asked = [LEVELS.index(listener.level) for listener in self._listeners.values() if server in listener.servers]
        return LEVELS[min(asked, default=0)]

    def _heard(self, server: str, method: str, params: dict[str, Any]) -> None:
        level = params.get("level")
        if method != LOG_MESSAGE or level not in LEVELS:
            return
        for session_id, listener in list(self._listeners.items()):
            if server in listener.servers and LEVELS.index(level) >= LEVELS.index(listener.level):
                self._background.spawn(self._deliver(session_id, listener, server, params))

    async def _deliver(self, session_id: str, listener: _Listener, server: str, params: dict[str, Any]) -> None:
        logger = params.get("logger")
        if listener.prefixed:
            logger = f"{server}/{logger}" if logger else server
        try:
            with warnings.catch_warnings():  # deprecated for 2026-07-28 callers, who never set a level this way
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await listener.session.send_log_message(params["level"], params.get("data"), logger)
        except Exception:  # the caller's session is gone: it hears nothing any more
            log.debug("log message undeliverable; dropping the session's level", exc_info=True)
            if self._listeners.get(session_id) is listener:
                del self._listeners[session_id]
