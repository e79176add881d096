"""How Jarvis opens its session to a server: whichever era the server speaks (issue 33 item 1).

A 2025-era server and one of both eras take the 2025 `initialize` (Jarvis then asks `server/discover` to learn the
2026 versions it also answers, connection.py). A server written for 2026-07-28 alone may have no `initialize` at
all, as the specification allows: it is reached through `server/discover` instead, and every request to it then
carries its own `_meta` envelope and headers (envelope.py, wire.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from jarvis.aggregator.downstream.transport.stdio import ChildProcess

log = logging.getLogger(__name__)


# Servers found to speak 2026-07-28 only, by name: Jarvis remembers what each speaks, so their restarts ask
# `server/discover` first and cost no refused `initialize`. One that no longer answers it is tried both ways again.
_DISCOVER_FIRST: set[str] = set()


def known_2026_only(server: str) -> bool:
    """Whether `server` was found to speak 2026-07-28 only (it refused `initialize` and answered `server/discover`)."""
    return server in _DISCOVER_FIRST


async def handshake(session: ClientSession, server: str) -> None:
    """The 2025 handshake; for a server without one (2026-07-28 only: it answers `initialize` with -32601 or -32022,
    or with a result that is no 2025 one), `server/discover`, which the SDK retries once with a version the server
    lists on -32022. If neither works, the handshake's own error stands."""
    if server in _DISCOVER_FIRST:
        try:
            await session.discover()
            return
        except (MCPError, RuntimeError, ValidationError) as exc:
            log.info("server %s no longer answers server/discover (%s); trying initialize", server, exc)
            _DISCOVER_FIRST.discard(server)
    try:
        await session.initialize()
        return
    except MCPError as exc:
        if exc.error.code not in (types.METHOD_NOT_FOUND, types.UNSUPPORTED_PROTOCOL_VERSION):
            raise
        refused: Exception = exc
    except (ValidationError, RuntimeError) as exc:
        refused = exc
    try:
        await session.discover()
    except (MCPError, RuntimeError, ValidationError) as exc:
        log.debug("server/discover failed too after initialize was refused: %s", exc)
        raise refused from None
    _DISCOVER_FIRST.add(server)


async def initialize_or_exit(session: ClientSession, child: ChildProcess, server: str) -> None:
    """The handshake, cut short when the process exits first (a crash should not wait out the timeout)."""
    opening = asyncio.ensure_future(handshake(session, server))
    exited = asyncio.ensure_future(child.exited.wait())
    try:
        await asyncio.wait({opening, exited}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        exited.cancel()
        if not opening.done():
            opening.cancel()
            with contextlib.suppress(asyncio.CancelledError, MCPError):
                await opening
    if opening.done() and not opening.cancelled():
        error = opening.exception()
        if error is None:
            return
        if not (isinstance(error, MCPError) and error.error.code == types.CONNECTION_CLOSED):
            raise error
    with contextlib.suppress(TimeoutError):  # stdout closes first; the exit status follows shortly
        await asyncio.wait_for(child.exited.wait(), 1.0)
    raise ConnectionError(f"the server exited during initialize: {child.describe_exit()}")
