"""How Jarvis opens its session to a server: whichever era the server speaks (issue 33 item 1, issue 47 item 1).

Over streamable HTTP the first request is a 2026-07-28 `server/discover`, with its `_meta` envelope and headers
(`MCP-Protocol-Version`, `Mcp-Method`), as the specification's backward compatibility says. A server that answers it
is then asked whether it speaks 2025 too, with an `initialize` that carries the request metadata a 2026-07-28 server
checks on every POST (`dressed`), which a 2025 server ignores: a dual-era server takes it, so 2025-era callers keep
its 2025 session (its standing stream, the questions it asks mid-call, JSON answers on the direct path); a 2026-only
one refuses it and the session adopts the discover. (Its DiscoverResult cannot tell: the SDK's dual-era servers list
only their 2026 versions there.) A recognized 2026 error to the discover (-32022 retried once at a version the server
lists, -32020, -32021) stands: the server is of that era. Any other answer (an error, a 4xx without a 2026 error, a
result that is no DiscoverResult, no answer within `PROBE_SECONDS`) is a 2025-era server's, which gets the plain
`initialize` (docs/decisions/0067-discover-first-and-cimd.md).

Over stdio (a child process, a container) the 2025 `initialize` comes first, as before: a stream's era is fixed by
its first request, so a dual-era server there keeps the 2025 session its 2025-era callers need; a server that refuses
`initialize` (-32601, -32022, no 2025 result) is reached through `server/discover` instead.

What each server answered is remembered (per process, by server name, for as long as its URL stays the same): a
2025-era HTTP server's restarts go straight to `initialize`, a 2026-only server's to `server/discover`; one that no
longer answers as remembered is tried the other way. Every request to a 2026-only server then carries its own `_meta`
envelope and headers (envelope.py, wire.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import CallOptions, Dispatcher
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_METHOD_HEADER, MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    LATEST_MODERN_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)
from pydantic import ValidationError

from jarvis.aggregator.downstream.transport.envelope import CLIENT_INFO, client_envelope
from jarvis.aggregator.downstream.transport.stdio import ChildProcess

log = logging.getLogger(__name__)

PROBE_SECONDS = 5.0  # a server that never answers server/discover is taken for a 2025-era one after this long
ASK_SECONDS = 10.0  # a server that answered it but not `initialize` within this long is reached in 2026-07-28
# Errors only a 2026-era server answers: the server is of that era, whatever went wrong (never a fallback).
_MODERN_ERRORS = (types.HEADER_MISMATCH, types.MISSING_REQUIRED_CLIENT_CAPABILITY, types.UNSUPPORTED_PROTOCOL_VERSION)
_REFUSED = (ValidationError, RuntimeError)  # an answer that is no result of the method asked (or no usable one)

# What each server was found to speak, by name: "modern" (2026-07-28 only) or "legacy" (no 2026-07-28), and at which
# URL ("" for a stdio server).
_ERAS: dict[str, tuple[str, str]] = {}


def known_2026_only(server: str) -> bool:
    """Whether `server` was found to speak 2026-07-28 only (it answered `server/discover` and no 2025 version)."""
    return _ERAS.get(server, ("", ""))[0] == "modern"


def remembered(server: str, url: str = "") -> str | None:
    """What `server` was found to speak at `url`: "modern", "legacy", or None (not yet known, or both eras)."""
    era, where = _ERAS.get(server, (None, ""))
    return era if where == url else None


def _remember(server: str, era: str | None, url: str = "") -> None:
    if era is None:
        _ERAS.pop(server, None)
    else:
        _ERAS[server] = (era, url)


def _modern(versions: list[str]) -> tuple[str, ...]:
    return tuple(v for v in MODERN_PROTOCOL_VERSIONS if v in versions)


async def _probe(session: ClientSession) -> types.DiscoverResult | None:
    """`server/discover` in the newest 2026 version (once more in one the server lists, on -32022): its result, or
    None when the server answered as a 2025-era one. A recognized 2026 error is raised."""
    version = LATEST_MODERN_VERSION
    for attempt in range(2):
        try:
            with anyio.fail_after(PROBE_SECONDS):
                return types.DiscoverResult.model_validate(await session.send_discover(version))
        except TimeoutError:
            return None
        except ValidationError:
            return None
        except MCPError as exc:
            if exc.error.code not in _MODERN_ERRORS:
                log.debug("server/discover answered %s: a 2025-era server", exc.error.code)
                return None
            supported = _supported(exc)
            mutual = _modern(supported)
            if exc.error.code == types.UNSUPPORTED_PROTOCOL_VERSION and mutual and attempt == 0:
                version = mutual[-1]
                continue
            if exc.error.code == types.UNSUPPORTED_PROTOCOL_VERSION and any(
                v in HANDSHAKE_PROTOCOL_VERSIONS for v in supported
            ):
                return None  # it names a 2025 version it speaks: the handshake
            raise
    return None


def _supported(exc: MCPError) -> list[str]:
    try:
        return types.UnsupportedProtocolVersionErrorData.model_validate(exc.error.data).supported
    except ValidationError:
        return []


async def _initialize_else_discover(session: ClientSession, server: str, url: str) -> tuple[str, ...]:
    """The 2025 handshake; for a server without one (it answers `initialize` with -32601 or -32022, or with a result
    that is no 2025 one), `server/discover`, which the SDK retries once with a version the server lists on -32022.
    If neither works, the handshake's own error stands."""
    try:
        await session.initialize()
        return ()
    except MCPError as exc:
        if exc.error.code not in (types.METHOD_NOT_FOUND, types.UNSUPPORTED_PROTOCOL_VERSION):
            raise
        refused: Exception = exc
    except _REFUSED as exc:
        refused = exc
    try:
        discovered = await session.discover()
    except (MCPError, *_REFUSED) as exc:
        log.debug("server/discover failed too after initialize was refused: %s", exc)
        raise refused from None
    _remember(server, "modern", url)
    return _modern(discovered.supported_versions)


async def dressed(session: ClientSession, dispatcher: Dispatcher[Any]) -> bool | None:
    """The 2025 handshake with a server that answered `server/discover`, in the request metadata of 2026-07-28 (its
    headers, and `_meta` naming the 2025 version it asks for): whether the server took it (dual-era) or refused it
    in any way (2026-only: it answered `server/discover`); None when it did not answer within `ASK_SECONDS`. A closed
    connection is raised."""
    capabilities = session._build_capabilities(LATEST_HANDSHAKE_VERSION).model_dump(  # as `initialize()` declares
        by_alias=True, mode="json", exclude_none=True
    )
    meta = {**client_envelope(LATEST_HANDSHAKE_VERSION), types.CLIENT_CAPABILITIES_META_KEY: capabilities}
    params = {
        "protocolVersion": LATEST_HANDSHAKE_VERSION,
        "capabilities": capabilities,
        "clientInfo": CLIENT_INFO.model_dump(exclude_none=True),
        "_meta": meta,
    }
    headers = {MCP_PROTOCOL_VERSION_HEADER: LATEST_HANDSHAKE_VERSION, MCP_METHOD_HEADER: "initialize"}
    opts: CallOptions = {"headers": headers, "cancel_on_abandon": False, "timeout": ASK_SECONDS}
    try:
        result = types.InitializeResult.model_validate(await dispatcher.send_raw_request("initialize", params, opts))
    except MCPError as exc:
        if exc.error.code == types.CONNECTION_CLOSED:
            raise
        if exc.error.code == types.REQUEST_TIMEOUT:
            return None
        log.debug("initialize refused (%s): a 2026-only server", exc.error.code)
        return False
    except ValidationError:
        return False
    if result.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return False
    session.adopt(result)
    await session.send_notification(types.InitializedNotification())
    return True


async def handshake(
    session: ClientSession, server: str, url: str = "", dispatcher: Dispatcher[Any] | None = None
) -> tuple[str, ...]:
    """Opens the session to `server` (at `url` over HTTP, with the session's `dispatcher`: discover first; "" for a
    stdio stream: initialize first); returns the 2026-era versions the server answers (its `server/discover`'s)
    besides the session's own: empty for a 2025-era server, or one whose stream stays in the era of its handshake."""
    era = remembered(server, url)
    if era == "modern":
        try:
            return _modern((await session.discover()).supported_versions)
        except (MCPError, *_REFUSED) as exc:
            log.info("server %s no longer answers server/discover (%s); trying initialize", server, exc)
            _remember(server, None)
    if not url or dispatcher is None or era == "legacy":
        return await _initialize_else_discover(session, server, url)
    discovered = await _probe(session)
    modern = _modern(discovered.supported_versions) if discovered is not None else ()
    if discovered is None or not modern:
        _remember(server, "legacy", url)
        return await _initialize_else_discover(session, server, url)
    took = await dressed(session, dispatcher)
    if took:  # dual-era: the 2025 session, and the 2026 versions it also answers
        _remember(server, None)
        return modern
    session.adopt(discovered)
    _remember(server, "modern" if took is False else None, url)  # no answer in time: asked again next start
    return modern


async def initialize_or_exit(session: ClientSession, child: ChildProcess, server: str) -> tuple[str, ...]:
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
            return opening.result()
        if not (isinstance(error, MCPError) and error.error.code == types.CONNECTION_CLOSED):
            raise error
    with contextlib.suppress(TimeoutError):  # stdout closes first; the exit status follows shortly
        await asyncio.wait_for(child.exited.wait(), 1.0)
    raise ConnectionError(f"the server exited during initialize: {child.describe_exit()}")
