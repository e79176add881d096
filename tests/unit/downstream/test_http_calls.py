"""2026-07-28 requests on Jarvis's own keep-alive connections (http_calls.py), against a scripted HTTP server on
loopback: what goes on the wire, how each kind of answer is read, and what a connection is left in afterwards."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp.shared.exceptions import MCPError

from jarvis.aggregator.downstream.transport.http_calls import HttpCalls, Redirected, usable_for
from jarvis.aggregator.downstream.transport.http_link import ConnectionFailed, SseEvents
from jarvis.aggregator.downstream.transport.stdio import OVERSIZED

pytestmark = pytest.mark.anyio

JsonObject = dict[str, Any]


@dataclass
class Seen:
    head: dict[str, str]
    body: JsonObject
    connection: int  # which TCP connection it came on, counted from 1
    reader: asyncio.StreamReader
    method: str = "POST"
    at: float = 0.0  # the loop's time when it arrived


Reply = Callable[[Seen, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Scripted:
    """An HTTP/1.1 server that answers the n-th request with the n-th reply (the last one repeats)."""

    replies: list[Reply]
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0
    closed: list[int] = field(default_factory=list)  # connections whose client went away
    port: int = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        try:
            while True:
                try:
                    raw = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    self.closed.append(number)
                    return
                request_line, *lines = raw.decode("latin-1").split("\r\n")
                head = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}
                length = int(head.get("content-length", "0"))  # none: a GET resuming a stream
                body = json.loads(await reader.readexactly(length)) if length else {}
                seen = Seen(
                    head, body, number, reader, request_line.partition(" ")[0], asyncio.get_running_loop().time()
                )
                self.seen.append(seen)
                reply = self.replies[min(len(self.seen), len(self.replies)) - 1]
                try:
                    await reply(seen, writer)
                    await writer.drain()
                except ConnectionError:
                    return  # the reply dropped the connection, or the client did
        finally:
            writer.close()


def respond(status: int, content_type: str, payload: bytes, *, extra: str = "") -> Reply:
    async def reply(seen: Seen, writer: asyncio.StreamWriter) -> None:
        head = f"HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {len(payload)}\r\n{extra}"
        writer.write(f"{head}\r\n".encode() + payload)

    return reply


def json_result(result: JsonObject) -> Reply:
    async def reply(seen: Seen, writer: asyncio.StreamWriter) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": seen.body["id"], "result": result}).encode()
        await respond(200, "application/json", body)(seen, writer)

    return reply


def sse(*frames: JsonObject | str, answer: JsonObject | None = None, separator: str = "\n") -> Reply:
    """An SSE answer sent chunk by chunk: the frames, then the request's result (`answer`), if any."""

    async def reply(seen: Seen, writer: asyncio.StreamWriter) -> None:
        events = [frame if isinstance(frame, str) else f"data: {json.dumps(frame)}" for frame in frames]
        if answer is not None:
            events.append(
                f"event: message{separator}data: "
                + json.dumps({"jsonrpc": "2.0", "id": seen.body["id"], "result": answer})
            )
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for event in events:
            data = (event + separator + separator).encode()
            # Every event split in two chunks: the reader must join pieces, wherever the network cuts them.
            for piece in (data[: len(data) // 2], data[len(data) // 2 :]):
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                await writer.drain()
        writer.write(b"0\r\n\r\n")

    return reply


def hang() -> Reply:
    """No answer, until the client goes away."""

    async def reply(seen: Seen, writer: asyncio.StreamWriter) -> None:
        await seen.reader.read()

    return reply


def slam() -> Reply:
    """Close the connection without a word: as a server that closed an idle keep-alive connection."""

    async def reply(seen: Seen, writer: asyncio.StreamWriter) -> None:
        writer.transport.abort()

    return reply


@contextlib.asynccontextmanager
async def serving(*replies: Reply) -> AsyncIterator[Scripted]:
    scripted = Scripted(list(replies))
    server = await asyncio.start_server(scripted.serve, "127.0.0.1", 0)
    scripted.port = server.sockets[0].getsockname()[1]
    async with server:
        yield scripted


async def test_configured_framing_headers_are_the_connections_own() -> None:
    """A configured Content-Length or Transfer-Encoding would frame the request twice: it is left out."""

    async def hear(method: str, params: JsonObject | None) -> None:
        pass

    async with serving(json_result({"ok": 1})) as scripted:
        configured = {"Content-Length": "1", "Transfer-Encoding": "chunked", "Connection": "close", "X-Key": "k"}
        calls = HttpCalls(
            f"http://127.0.0.1:{scripted.port}/mcp",
            configured,
            server="web",
            connect_timeout=2,
            max_message_bytes=1 << 20,
            heard=hear,
        )
        await calls.request("ping", None, HEADERS, 5)
        await calls.request("ping", None, HEADERS, 5)
        head = scripted.seen[0].head
        assert head["x-key"] == "k"
        assert int(head["content-length"]) == len(json.dumps(scripted.seen[0].body, separators=(",", ":")))
        assert "transfer-encoding" not in head
        assert "connection" not in head
        assert scripted.connections == 1
        calls.close()


async def test_credentials_in_the_url_are_sent_as_basic_auth_and_accept_is_the_transports() -> None:
    async def hear(method: str, params: JsonObject | None) -> None:
        pass

    async with serving(json_result({"ok": 1})) as scripted:
        calls = HttpCalls(
            f"http://ada:p%40ss@127.0.0.1:{scripted.port}/mcp",
            {"Accept": "text/html"},
            server="web",
            connect_timeout=2,
            max_message_bytes=1 << 20,
            heard=hear,
        )
        await calls.request("ping", None, HEADERS, 5)
        head = scripted.seen[0].head
        assert head["authorization"] == "Basic " + base64.b64encode(b"ada:p@ss").decode()
        assert head["host"] == f"127.0.0.1:{scripted.port}"
        assert head["accept"] == "application/json, text/event-stream"
        calls.close()


def calls_to(scripted: Scripted, heard: list[tuple[str, Any]] | None = None, **options: Any) -> HttpCalls:
    async def hear(method: str, params: JsonObject | None) -> None:
        if heard is not None:
            heard.append((method, params))

    return HttpCalls(
        f"http://127.0.0.1:{scripted.port}/mcp?x=1",
        {"Authorization": "Bearer abc"},
        server="web",
        connect_timeout=2,
        max_message_bytes=options.get("max_message_bytes", 1 << 20),
        heard=hear,
    )


HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}


async def test_a_request_goes_out_as_the_sdk_client_sends_it_and_its_json_result_comes_back() -> None:
    async with serving(json_result({"content": [{"type": "text", "text": "é"}]})) as scripted:
        calls = calls_to(scripted)
        params = {"name": "echo", "arguments": {"text": "é"}, "_meta": {"k": 1}}
        result = await calls.request("tools/call", params, HEADERS, 5)
        assert result == {"content": [{"type": "text", "text": "é"}]}
        (seen,) = scripted.seen
        assert seen.body["method"] == "tools/call"
        assert seen.body["params"] == params
        assert seen.head["host"] == f"127.0.0.1:{scripted.port}"
        assert seen.head["authorization"] == "Bearer abc"
        assert seen.head["accept"] == "application/json, text/event-stream"
        assert seen.head["content-type"] == "application/json"
        assert seen.head["mcp-protocol-version"] == "2026-07-28"
        assert seen.head["mcp-method"] == "tools/call"
        assert seen.head["mcp-name"] == "echo"
        assert "mcp-session-id" not in seen.head
        calls.close()


async def test_sequential_requests_share_one_connection_and_concurrent_ones_open_more() -> None:
    async with serving(json_result({"ok": True})) as scripted:
        calls = calls_to(scripted)
        for _ in range(3):
            await calls.request("ping", None, HEADERS, 5)
        assert [s.connection for s in scripted.seen] == [1, 1, 1]
        assert "params" not in scripted.seen[0].body
        await asyncio.gather(*(calls.request("ping", None, HEADERS, 5) for _ in range(3)))
        assert scripted.connections == 3
        ids = [s.body["id"] for s in scripted.seen]
        assert len(set(ids)) == len(ids)  # every request its own id
        calls.close()


def _answered(headers: dict[str, str] | None = None, given: str = "", method: str = "") -> httpx2.Response:
    """The SDK's client's request (with `headers`, and `Mcp-Method: method`) and the server's answer (its
    `Mcp-Session-Id: given`), as its response hook sees them."""
    request = httpx2.Request(
        "POST", "http://x/", headers={**(headers or {}), **({"mcp-method": method} if method else {})}
    )
    return httpx2.Response(200, headers={"mcp-session-id": given} if given else {}, request=request)


async def test_the_sessions_id_follows_the_sdk_clients_requests() -> None:
    async with serving(json_result({}), respond(404, "text/plain", b"gone")) as scripted:
        calls = calls_to(scripted)
        await calls.follow_session(_answered(headers={"mcp-session-id": "s-1"}))
        await calls.request("ping", None, HEADERS, 5)
        assert scripted.seen[0].head["mcp-session-id"] == "s-1"
        with pytest.raises(MCPError) as refused:  # with a session a 404 means it ended, as the SDK's client reads it
            await calls.request("ping", None, HEADERS, 5)
        assert (refused.value.error.code, refused.value.error.message) == (types.INVALID_REQUEST, "Session terminated")
        calls.close()


async def test_the_sessions_id_is_known_from_the_handshakes_answer() -> None:
    """The id the server gives in its answer to `initialize` is carried by Jarvis's first request, before the SDK's
    `notifications/initialized` (which carries it too) has gone out; an id on a 2026-era answer is no session's."""
    async with serving(json_result({}), json_result({})) as scripted:
        calls = calls_to(scripted)
        await calls.follow_session(_answered(given="s-0", method="server/discover"))
        await calls.follow_session(_answered(given="s-2"))  # a plain `initialize`
        await calls.request("ping", None, HEADERS, 5)
        await calls.follow_session(_answered(given="s-3", method="initialize"))  # one in 2026 dress (handshake.py)
        await calls.request("ping", None, HEADERS, 5)
        assert [seen.head["mcp-session-id"] for seen in scripted.seen] == ["s-2", "s-3"]
        calls.close()


@pytest.mark.parametrize("separator", ["\n", "\r\n", "\r"])
async def test_an_sse_answer_delivers_the_notifications_before_the_result(separator: str) -> None:
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "one"}}
    task = {"jsonrpc": "2.0", "method": "notifications/tasks", "params": {"taskId": "t", "status": "working"}}
    priming = "id: 0\ndata:".replace("\n", separator)
    odd = {"jsonrpc": "2.0", "id": 99, "method": "sampling/createMessage", "params": {}}
    async with serving(sse(priming, log, odd, task, answer={"done": 1}, separator=separator)) as scripted:
        heard: list[tuple[str, Any]] = []
        calls = calls_to(scripted, heard)
        assert await calls.request("tools/call", {"name": "x"}, HEADERS, 5) == {"done": 1}
        assert heard == [(log["method"], log["params"]), (task["method"], task["params"])]
        await calls.request("tools/call", {"name": "x"}, HEADERS, 5)
        assert scripted.connections == 1  # the stream was read to its end, so its connection is used again
        calls.close()


async def test_progress_reports_for_the_request_reach_its_callback_in_order() -> None:
    def report(token: Any, done: Any, **more: Any) -> JsonObject:
        params = {"progressToken": token, "progress": done, **more}
        return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}

    async def reply(seen: Seen, writer: asyncio.StreamWriter) -> None:
        token = seen.body["params"]["_meta"]["progressToken"]
        frames = [
            report(token, 1, total=3, message="one"),
            report("someone-else", 2),
            report(token, True),  # not a number, as the SDK reads it
            report(token, 2.5),
        ]
        await sse(*frames, answer={"done": True})(seen, writer)

    heard_progress: list[tuple[float, float | None, str | None]] = []

    class Progress:
        async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
            heard_progress.append((progress, total, message))

    progress = Progress()

    async with serving(reply) as scripted:
        calls = calls_to(scripted)
        params = {"name": "x", "_meta": {"kept": 1}}
        assert await calls.request("tools/call", params, HEADERS, 5, progress=progress) == {"done": True}
        sent = scripted.seen[0].body
        assert sent["params"]["_meta"] == {"kept": 1, "progressToken": sent["id"]}
        assert params == {"name": "x", "_meta": {"kept": 1}}  # the caller's params are not changed
        assert heard_progress == [(1.0, 3.0, "one"), (2.5, None, None)]
        calls.close()


async def test_an_sse_stream_that_ends_without_the_result_is_an_error() -> None:
    async with serving(sse({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})) as scripted:
        with pytest.raises(MCPError) as ended:
            await calls_to(scripted).request("tools/call", {"name": "x"}, HEADERS, 5)
        assert ended.value.error.code == types.CONNECTION_CLOSED


async def test_errors_read_as_the_sdk_client_reads_them() -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "bad name", "data": {"n": 1}}}
    async with serving(
        respond(400, "application/json", json.dumps(error).encode()),
        respond(500, "text/html", b"<h1>oops</h1>"),
        respond(404, "text/plain", b"no"),
        respond(202, "application/json", b""),
        respond(200, "text/plain", b"hello"),
        respond(200, "application/json", b"{not json"),
    ) as scripted:
        calls = calls_to(scripted)
        outcomes = []
        for _ in range(6):
            with pytest.raises(MCPError) as refused:
                await calls.request("tools/call", {"name": "x"}, HEADERS, 5)
            outcomes.append((refused.value.error.code, refused.value.error.message))
        assert outcomes == [
            (-32602, "bad name"),
            (types.INTERNAL_ERROR, "Server returned an error response"),
            (types.METHOD_NOT_FOUND, "Not Found"),
            (types.INVALID_REQUEST, "server answered a request with 202 Accepted"),
            (types.INVALID_REQUEST, "Unexpected content type: text/plain"),
            (types.PARSE_ERROR, outcomes[5][1]),
        ]
        assert outcomes[5][1].startswith("Failed to parse JSON response")
        calls.close()


async def test_a_json_rpc_error_result_raises_it() -> None:
    async def reply(seen: Seen, writer: asyncio.StreamWriter) -> None:
        answer = {"jsonrpc": "2.0", "id": seen.body["id"], "error": {"code": -32021, "message": "later"}}
        await respond(200, "application/json", json.dumps(answer).encode())(seen, writer)

    async with serving(reply) as scripted:
        with pytest.raises(MCPError) as refused:
            await calls_to(scripted).request("tools/call", {"name": "x"}, HEADERS, 5)
        assert (refused.value.error.code, refused.value.error.message) == (-32021, "later")


async def test_a_redirect_is_left_to_the_sdk_client() -> None:
    async with serving(respond(307, "text/plain", b"", extra="location: /mcp/\r\n")) as scripted:
        with pytest.raises(Redirected):
            await calls_to(scripted).request("tools/call", {"name": "x"}, HEADERS, 5)


async def test_an_oversized_answer_is_dropped_unread_and_its_connection_closed() -> None:
    big = json.dumps({"content": [{"type": "text", "text": "x" * 5000}]})
    async with serving(sse(answer=json.loads(big)), json_result({"small": True})) as scripted:
        calls = calls_to(scripted, max_message_bytes=4096)
        with pytest.raises(MCPError) as dropped:
            await calls.request("tools/call", {"name": "x"}, HEADERS, 5)
        assert dropped.value.error.data == {"jarvis": OVERSIZED}
        assert "larger than 4,096 bytes" in dropped.value.error.message
        assert await calls.request("tools/call", {"name": "x"}, HEADERS, 5) == {"small": True}
        assert scripted.connections == 2
        calls.close()


async def test_a_timeout_closes_the_connection_which_is_how_2026_cancels() -> None:
    async with serving(hang(), json_result({"after": True})) as scripted:
        calls = calls_to(scripted)
        with pytest.raises(MCPError) as late:
            await calls.request("tools/call", {"name": "slow"}, HEADERS, 0.2)
        assert (late.value.error.code, late.value.error.message) == (
            types.REQUEST_TIMEOUT,
            "Request 'tools/call' timed out",
        )
        assert await calls.request("ping", None, HEADERS, 5) == {"after": True}
        assert [s.connection for s in scripted.seen] == [1, 2]
        calls.close()


async def test_a_2025_request_given_up_is_also_cancelled_by_a_notice() -> None:
    """A 2025-era server does not read a closed connection as a cancellation: it is told, as the SDK tells it."""
    async with serving(hang(), respond(202, "application/json", b"")) as scripted:
        calls = calls_to(scripted)
        await calls.follow_session(_answered(headers={"mcp-session-id": "s-9"}))
        legacy = {"MCP-Protocol-Version": "2025-11-25"}
        with pytest.raises(MCPError) as late:
            await calls.request("tools/call", {"name": "slow"}, legacy, 0.2, cancel_by_notice=True)
        assert late.value.error.code == types.REQUEST_TIMEOUT
        for _ in range(500):  # up to 5 s on a loaded machine
            if len(scripted.seen) == 2:
                break
            await asyncio.sleep(0.01)
        call, notice = scripted.seen
        assert notice.body == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": call.body["id"], "reason": "timed out after 0.2s"},
        }
        assert notice.head["mcp-session-id"] == "s-9"
        assert notice.head["mcp-protocol-version"] == "2025-11-25"
        calls.close()


async def test_a_cancelled_caller_closes_its_connection() -> None:
    async with serving(hang()) as scripted:
        calls = calls_to(scripted)
        request = asyncio.ensure_future(calls.request("tools/call", {"name": "slow"}, HEADERS, 30))
        while not scripted.seen:
            await asyncio.sleep(0.01)
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        for _ in range(500):  # up to 5 s on a loaded machine
            if scripted.closed:
                break
            await asyncio.sleep(0.01)
        assert scripted.closed == [1]


async def test_a_connection_the_server_closed_while_idle_is_replaced_and_the_request_sent_once() -> None:
    async with serving(json_result({"n": 1}), slam(), json_result({"n": 3})) as scripted:
        calls = calls_to(scripted)
        await calls.request("ping", None, HEADERS, 5)
        # The second request goes out on the kept connection, which the server drops unanswered: sent again, anew.
        assert await calls.request("ping", None, HEADERS, 5) == {"n": 3}
        assert [s.connection for s in scripted.seen] == [1, 1, 2]
        calls.close()


def until_close(content_type: str, payload: bytes, *, cut: int | None = None) -> Reply:
    """An answer with neither a length nor chunks (HTTP/1.0's framing): its body ends where the server closes the
    connection, after `cut` bytes of `payload` if given."""

    async def reply(seen: Seen, writer: asyncio.StreamWriter) -> None:
        body = payload.replace(b"ID", str(seen.body["id"]).encode())
        writer.write(f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n".encode())
        for piece in (body[: len(body) // 2], body[len(body) // 2 : cut]):  # in two pieces, as a network may cut it
            writer.write(piece)
            await writer.drain()
        writer.close()

    return reply


async def test_an_answer_that_ends_with_its_connection_is_read_to_the_close() -> None:
    json_answer = b'{"jsonrpc": "2.0", "id": ID, "result": {"n": 1}}'
    sse_answer = b'event: message\ndata: {"jsonrpc": "2.0", "id": ID, "result": {"n": 2}}\n\n'
    async with serving(
        until_close("application/json", json_answer),
        until_close("text/event-stream", sse_answer),
        until_close("application/json", json_answer, cut=-3),
        json_result({"n": 4}),
    ) as scripted:
        calls = calls_to(scripted)
        assert await calls.request("ping", None, HEADERS, 5) == {"n": 1}
        assert await calls.request("ping", None, HEADERS, 5) == {"n": 2}
        with pytest.raises(MCPError) as cut:  # what came before the close is the body: here, not JSON
            await calls.request("ping", None, HEADERS, 5)
        assert cut.value.error.code == types.PARSE_ERROR
        assert await calls.request("ping", None, HEADERS, 5) == {"n": 4}
        assert [s.connection for s in scripted.seen] == [1, 2, 3, 4]  # a connection that ended is not used again
        calls.close()


async def test_a_server_that_is_not_there_is_a_failed_connection() -> None:
    async with serving(json_result({})) as scripted:
        port = scripted.port
    calls = calls_to(Scripted([], port=port))
    with pytest.raises(ConnectionFailed, match=f"127.0.0.1:{port}"):
        await calls.request("ping", None, HEADERS, 5)


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


async def test_https_verifies_the_server_as_the_sdk_client_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same trust as httpx2's: the system's roots, or SSL_CERT_FILE; the name checked against the certificate."""
    cert_file, key_file = _self_signed(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert_file, key_file)
    scripted = Scripted([json_result({"over": "tls"})])
    server = await asyncio.start_server(scripted.serve, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]

    def calls() -> HttpCalls:
        async def hear(method: str, params: JsonObject | None) -> None:
            pass

        return HttpCalls(
            f"https://localhost:{port}/mcp", {}, server="tls", connect_timeout=5, max_message_bytes=1 << 20, heard=hear
        )

    async with server:
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        with pytest.raises(ConnectionFailed, match="certificate verify failed"):
            await calls().request("ping", None, HEADERS, 5)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        trusting = calls()
        assert await trusting.request("ping", None, HEADERS, 5) == {"over": "tls"}
        assert scripted.seen[0].head["host"] == f"localhost:{port}"
        trusting.close()


def test_a_configured_header_that_would_split_the_request_is_refused() -> None:
    async def hear(method: str, params: JsonObject | None) -> None:
        pass

    for headers in ({"X-Token": "a\r\nX-Admin: 1"}, {"Bad Name": "v"}):
        with pytest.raises(ValueError, match="not a header Jarvis can send"):
            HttpCalls(
                "http://127.0.0.1:9/mcp", headers, server="web", connect_timeout=1, max_message_bytes=1, heard=hear
            )


def test_server_sent_events_are_decoded_across_pieces_and_line_ends() -> None:
    events = SseEvents()
    stream = b"event: message\r\ndata: a\r\ndata: b\r\n\r\n: a comment\n\nid: 7\ndata:c\r\rdata: {}\n"
    decoded = [event for n in range(len(stream)) for event in events.feed(stream[n : n + 1])]
    assert decoded == [("message", "a\nb"), ("message", "c")]
    assert list(events.feed(b"\n")) == [("message", "{}")]


def test_a_proxy_from_the_environment_keeps_the_sdks_client(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    assert usable_for("http://127.0.0.1:9/mcp")
    assert usable_for("https://example.test/mcp")
    assert not usable_for("ftp://example.test/mcp")
    monkeypatch.setenv("https_proxy", "http://proxy.test:3128")
    assert not usable_for("https://example.test/mcp")
    assert usable_for("http://example.test/mcp")
    monkeypatch.setenv("no_proxy", "example.test")
    assert usable_for("https://example.test/mcp")
