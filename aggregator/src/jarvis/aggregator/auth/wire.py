"""What the gate reads of a request and how it answers one it refuses, at the ASGI level."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REALM = 'Bearer realm="jarvis"'
SESSION_HEADER = "mcp-session-id"
_OWS = b" \t"


@dataclass(frozen=True)
class Refusal:
    """The gate's answer to a request it does not let through; `reason` labels the auth-failure metric (None: a
    refusal that is no auth failure, such as a rate limit, which the limiter counts itself)."""

    response: ASGIApp
    reason: str | None = None


def refusal(reason: str, status: int, error: str, message: str, headers: dict[str, str] | None = None) -> Refusal:
    return Refusal(JSONResponse({"error": error, "message": message}, status_code=status, headers=headers), reason)


def insufficient_scope(message: str) -> Refusal:
    return refusal(
        "insufficient_scope",
        403,
        "insufficient_scope",
        message,
        {"WWW-Authenticate": f'{REALM}, error="insufficient_scope"'},
    )


def quoted(text: str) -> str:
    """`text` as the inside of an auth-param's quoted string (RFC 9110 5.6.4)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def with_challenge(send: Send, params: str) -> Send:
    """`send`, adding `params` to the WWW-Authenticate of the refusal it sends (RFC 9728 5.1: where the metadata is)."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start" and params:
            headers = [
                (key, value + b", " + params.encode() if key.lower() == b"www-authenticate" else value)
                for key, value in message.get("headers", [])
            ]
            message = {**message, "headers": headers}
        await send(message)

    return wrapped


async def read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The whole body, or (b"", True) once it passes `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks), False


def replay(body: bytes, receive: Receive) -> Receive:
    """Hand the already-read body to the app, then the real channel (which reports disconnects)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def trimmed(scope: Scope) -> Scope:
    """`scope` with its header values stripped of surrounding whitespace, which is not part of a field value.

    RFC 9110 5.5: a parser excludes leading and trailing whitespace from a field value. h11 does; the
    httptools parser uvicorn prefers keeps it, so `Mcp-Name:  tools/call ` would not match the body's name.
    """
    headers = scope.get("headers") or []
    if all(not value or (value[0] not in _OWS and value[-1] not in _OWS) for _, value in headers):
        return scope
    return {**scope, "headers": [(key, value.strip(_OWS)) for key, value in headers]}
