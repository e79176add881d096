"""Per-request choice between a JSON body and an SSE stream for the proxy surfaces' answers.

An SSE answer costs about 1.4 ms more per call than a JSON body (SDK server and client, measured
with the bare SDK server of bench/common.py). A proxied call needs a stream only when something may
reach the caller before the result: progress, which the proxy relays only when the caller sent a
`progressToken`, and log messages, which a 2026-07-28 tool call asks for in `_meta`. So those requests
get SSE and all others a JSON body, on the profiles that mix servers; a surface standing for one
server (a share, an unprefixed profile) always streams, as the server itself would over streamable
HTTP, so the conformance suite sees the same answers there.

The SDK fixes the answer mode per session manager (`json_response`) and only ever tests its truth;
`PerRequestAnswers` is that flag with a truth decided by the request being served (a ContextVar).
A stateful session's opening request (`initialize`) always takes SSE: the session's message
router is started from that request's context, and it must see SSE mode so it keeps routing the
progress of later streamed requests instead of dropping it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from mcp_types import LOG_LEVEL_META_KEY

_ANSWER_AS_JSON: ContextVar[bool] = ContextVar("jarvis_answer_as_json", default=False)
CALL = "tools/call"


class PerRequestAnswers:
    """Stands in for the SDK's `json_response` bool: true while serving a request that takes a JSON body."""

    def __bool__(self) -> bool:
        return _ANSWER_AS_JSON.get()


def answer_as_json(method: str, messages: list[Any]) -> bool:
    """Whether a request's answer can be a JSON body: a POST of messages none of which wants a stream."""
    return method == "POST" and bool(messages) and not any(_wants_stream(m) for m in messages)


def _wants_stream(message: Any) -> bool:
    if not isinstance(message, dict):
        return True
    if message.get("method") in ("initialize", "subscriptions/listen"):  # a listen answer is its stream
        return True
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return False
    # The same test the proxy applies before relaying progress (`progressToken is not None`); a 2026-07-28 tool call
    # that asks for log messages gets them on its stream too (relay.py: calls are what they are relayed for).
    return meta.get("progressToken") is not None or (message.get("method") == CALL and LOG_LEVEL_META_KEY in meta)


@contextlib.contextmanager
def answer_mode(as_json: bool) -> Iterator[None]:
    """Serve the request in this block with a JSON body (True) or an SSE stream (False)."""
    token = _ANSWER_AS_JSON.set(as_json)
    try:
        yield
    finally:
        _ANSWER_AS_JSON.reset(token)
