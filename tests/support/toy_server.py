"""A tiny MCP server over stdio, written as raw JSON-RPC so tests can make it misbehave on purpose.

    python toy_server.py MODE

MODE: `ok` (well behaved), `exit` (dies before initialize, with a message on stderr), `hang` (never answers
initialize), `slowstart` (answers initialize after TOY_START_SECONDS, default 4: a server started through `npx`),
`garbage` (prints non-JSON lines on stdout, then behaves), `badschema` (lists tools whose schemas are broken),
`badheaders` (also lists the conformance suite's tools with invalid `x-mcp-header` declarations, SEP-2243, and one
with valid ones; a call to any of them answers "Tool call received"),
`modern` (speaks 2026-07-28 only: answers `initialize` with -32601 as the specification allows, is reached through
`server/discover`, refuses with -32022 a request whose `_meta` does not say 2026-07-28, and `whoami` reports the
`_meta` envelope the call came with and how many `initialize` it refused; its `ask` tool needs two rounds of input
(a name and the roots, then a sample) through input-required results, `nag` asks forever, `grow` adds a tool and
tells it only on open `subscriptions/listen` streams that asked for tool list changes (`whoami` lists them), `note`
adds a resource and tells it likewise, `touch` tells a resource's update to the listen streams that named it in
`resourceSubscriptions` (2026-07-28 has no resources/subscribe); resources/list answers with `ttlMs`
TOY_LIST_TTL_MS and `whoami` counts them (tools/list likewise with TOY_TOOLS_TTL_MS; `sneak` adds a tool telling nobody)
(`ask` refuses with -32021 a client whose `_meta` lacks the capabilities it asks for), and `whoami` reports each round:
its JSON-RPC id, the `requestState` and the keys of the `inputResponses` it came with), `resumable PORT` (streamable
HTTP on 127.0.0.1:PORT/mcp instead of stdio: every tools/call's SSE stream ends after a priming event with an id and
`retry: TOY_RETRY_MS` (default 300), and the result comes on the GET that resumes it with `Last-Event-ID`; `whoami`
reports each resumption: the id asked for and the milliseconds since its stream was cut). Environment: TOY_NAME
(reported by `whoami`), TOY_DESCRIPTION_FILE (the `echo` tool's description is read from it at start, so a test can
change it between runs).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
CANCELLED: list[Any] = []  # ids of requests the client cancelled (reported by `whoami`)
MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
REFUSED: list[Any] = []  # `modern` mode: the initialize requests it refused (reported by `whoami`)
ROUNDS: list[dict[str, Any]] = []  # `modern` mode: each `ask` call as it came (reported by `whoami`)
LISTENING: dict[Any, dict[str, Any]] = {}  # `modern` mode: open subscriptions/listen requests by id, with their filter
GROWN: list[str] = []  # `modern` mode: tools added by `grow`
NOTES: list[str] = ["toy://notes/1"]  # `modern` mode: its resources (`note` adds one)
LISTED: list[int] = []  # `modern` mode: each resources/list it answered (reported by `whoami`)
TOOLS_LISTED: list[int] = []  # `modern` mode with TOY_TOOLS_TTL_MS: each tools/list it answered (`whoami`)
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
# A state a relay could mangle: quotes, a backslash, non-ASCII. It must come back byte for byte.
ROUND_ONE = 'round-1 "ünïcode" \\ ✓'
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _description() -> str:
    path = os.environ.get("TOY_DESCRIPTION_FILE")
    return Path(path).read_text().strip() if path else "Echo the text back"


# `modern`: told on the listen streams subscribed to the resource; `resumable`: on the standalone stream.
TOUCH = {
    "name": "touch",
    "description": "Updates a resource, told to its subscribers",
    "inputSchema": {"type": "object", "properties": {"uri": {"type": "string"}}},
}


def tools() -> list[dict[str, Any]]:
    text = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    listed = [
        {"name": "echo", "description": _description(), "inputSchema": text, "annotations": {"readOnlyHint": True}},
        {"name": "whoami", "description": "Name and pid of this server", "inputSchema": {"type": "object"}},
        {
            "name": "slow",
            "description": "Sleep, reporting progress",
            "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
        },
        {"name": "fail", "description": "Always a tool error", "inputSchema": {"type": "object"}},
        {"name": "crash", "description": "Exit in the middle of the call", "inputSchema": {"type": "object"}},
        {
            "name": "big",
            "description": "A large result",
            "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}},
        },
    ]
    if MODE == "modern":
        listed += [
            {"name": "ask", "description": "Two rounds of input-required results", "inputSchema": {"type": "object"}},
            {"name": "nag", "description": "Asks for input forever", "inputSchema": {"type": "object"}},
            {"name": "grow", "description": "Adds a tool, told on listen streams", "inputSchema": {"type": "object"}},
            {"name": "sneak", "description": "Adds a tool, told to nobody", "inputSchema": {"type": "object"}},
            {
                "name": "note",
                "description": "Adds a resource, told on listen streams",
                "inputSchema": {"type": "object"},
            },
            TOUCH,
        ]
        listed += [{"name": name, "description": "Grown", "inputSchema": {"type": "object"}} for name in GROWN]
    if MODE == "resumable":
        listed.append(TOUCH)
    if MODE == "badschema":
        listed += [
            {"name": "no_type", "description": "schema without type", "inputSchema": {"properties": {"x": {}}}},
            {
                "name": "not_schema",
                "description": "schema that is not one",
                "inputSchema": {"type": "object", "properties": 5, "required": "x"},
            },
            {
                "name": "string_schema",
                "description": "schema of the wrong kind",
                "inputSchema": "nope",
                "outputSchema": {"type": "string"},
            },
        ]
    if MODE == "badheaders":
        listed += [{"name": name, "inputSchema": {"type": "object", "properties": props}} for name, props in HEADERS]
    return listed


def _header(header: Any, kind: str = "string") -> dict[str, Any]:
    return {"type": kind, "x-mcp-header": header}


# `badheaders`: the declarations of the conformance scenario `http-invalid-tool-headers`, the first one valid.
HEADERS: list[tuple[str, dict[str, Any]]] = [
    ("valid_tool", {"region": _header("Region")}),
    ("invalid_empty_header", {"value": _header("")}),
    ("invalid_object_header", {"data": _header("Data", "object")}),
    ("invalid_array_header", {"items": {**_header("Items", "array"), "items": {"type": "string"}}}),
    ("invalid_null_header", {"nil": _header("Nil", "null")}),
    ("invalid_number_header", {"score": _header("Score", "number")}),
    ("invalid_duplicate_same_case", {"field1": _header("Region"), "field2": _header("Region")}),
    ("invalid_duplicate_diff_case", {"field1": _header("MyField"), "field2": _header("myfield")}),
    ("invalid_space_in_name", {"value": _header("My Region")}),
    ("invalid_colon_in_name", {"value": _header("Region:Primary")}),
    ("invalid_non_ascii_name", {"value": _header("R\u00e9gion")}),
    ("invalid_control_char_name", {"value": _header("Region\t1")}),
]


def _missing_capability(params: dict[str, Any]) -> str | None:
    """The first capability the `ask` tool needs that the request's client does not declare."""
    needs = ("elicitation", "roots", "sampling") if params.get("name") == "ask" else ()
    declared = (params.get("_meta") or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
    return next((need for need in needs if need not in declared), None)


def _needs(state: str, **requests: dict[str, Any]) -> dict[str, Any]:
    return {"resultType": "input_required", "requestState": state, "inputRequests": requests}


def ask(request: dict[str, Any]) -> dict[str, Any]:
    """Round one asks a name (elicitation) and the roots; round two a sample; then the answer, from the state."""
    params = request.get("params", {})
    state, answers = params.get("requestState"), params.get("inputResponses") or {}
    ROUNDS.append({"id": request.get("id"), "state": state, "answered": sorted(answers)})
    if state == ROUND_ONE and {"name", "roots"} <= answers.keys():
        known = {"name": answers["name"]["content"]["name"], "roots": [r["uri"] for r in answers["roots"]["roots"]]}
        greet = {"role": "user", "content": {"type": "text", "text": f"Greet {known['name']}"}}
        sample = {"method": "sampling/createMessage", "params": {"messages": [greet], "maxTokens": 20}}
        return _needs(json.dumps(known), model=sample)
    if state is not None and state != ROUND_ONE and "model" in answers:
        known, said = json.loads(state), answers["model"]["content"]["text"]
        return {"content": [{"type": "text", "text": f"{said} ({known['name']}; roots {', '.join(known['roots'])})"}]}
    name = {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "Your name?", "requestedSchema": NAME_FORM},
    }
    return _needs(ROUND_ONE, name=name, roots={"method": "roots/list", "params": {}})


def grow(write: Any) -> dict[str, Any]:
    """Add a tool; tell it only on the listen streams that asked for tool list changes, as 2026-07-28 says."""
    GROWN.append(f"grown{len(GROWN) + 1}")
    for rid, wanted in LISTENING.items():
        if wanted.get("toolsListChanged"):
            write(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/tools/list_changed",
                    "params": {"_meta": {SUBSCRIPTION_ID: rid}},
                }
            )
    return {"content": [{"type": "text", "text": f"{GROWN[-1]} added; {len(LISTENING)} listening"}]}


def note(write: Any) -> dict[str, Any]:
    """Add a resource; tell it on the listen streams that asked for resource list changes."""
    NOTES.append(f"toy://notes/{len(NOTES) + 1}")
    for rid, wanted in LISTENING.items():
        if wanted.get("resourcesListChanged"):
            params = {"_meta": {SUBSCRIPTION_ID: rid}}
            write({"jsonrpc": "2.0", "method": "notifications/resources/list_changed", "params": params})
    return {"content": [{"type": "text", "text": f"{NOTES[-1]} added"}]}


def touch(args: dict[str, Any], write: Any) -> dict[str, Any]:
    """Tell that the resource `uri` was updated, on the listen streams that named it in `resourceSubscriptions`."""
    uri, told = str(args.get("uri", "")), 0
    for rid, wanted in LISTENING.items():
        if uri in wanted.get("resourceSubscriptions", []):
            params = {"uri": uri, "_meta": {SUBSCRIPTION_ID: rid}}
            write({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params})
            told += 1
    return {"content": [{"type": "text", "text": f"{uri} updated; told {told} stream(s)"}]}


def resources() -> dict[str, Any]:
    """`modern` mode's resources/list, with the caching hint TOY_LIST_TTL_MS (default 0: immediately stale)."""
    LISTED.append(len(NOTES))
    listed = [{"uri": uri, "name": uri.rsplit("/", 1)[-1]} for uri in NOTES]
    return {"resources": listed, "ttlMs": int(os.environ.get("TOY_LIST_TTL_MS", "0")), "cacheScope": "public"}


async def listen(rid: Any, params: dict[str, Any], write: Any) -> None:
    """Hold a subscriptions/listen stream: acknowledge what it asked for, then keep it until the client cancels."""
    told = ("toolsListChanged", "resourcesListChanged", "resourceSubscriptions")
    wanted = {k: v for k, v in (params.get("notifications") or {}).items() if k in told and v}
    ack = {"notifications": wanted, "_meta": {SUBSCRIPTION_ID: rid}}
    write({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack})
    LISTENING[rid] = wanted
    try:
        await asyncio.Event().wait()
    finally:
        LISTENING.pop(rid, None)


async def call(name: str, args: dict[str, Any], request: dict[str, Any], write: Any) -> dict[str, Any]:
    if name == "grow" and MODE == "modern":
        return grow(write)
    if name == "sneak" and MODE == "modern":
        GROWN.append(f"sneaked{len(GROWN) + 1}")  # told to nobody: a client learns of it by listing again
        return {"content": [{"type": "text", "text": f"{GROWN[-1]} added quietly"}]}
    if name == "note" and MODE == "modern":
        return note(write)
    if name == "touch" and MODE == "modern":
        return touch(args, write)
    if name == "ask" and MODE == "modern":
        return ask(request)
    if name == "nag" and MODE == "modern":
        return _needs("again", roots={"method": "roots/list", "params": {}})
    if name == "echo":
        return {"content": [{"type": "text", "text": str(args.get("text", ""))}]}
    if MODE == "badheaders" and name in dict(HEADERS):
        return {"content": [{"type": "text", "text": "Tool call received"}]}
    if name == "whoami":
        who = {"name": os.environ.get("TOY_NAME", "toy"), "pid": os.getpid(), "cancelled": len(CANCELLED)}
        if MODE == "modern":
            who["meta"] = request.get("params", {}).get("_meta") or {}
            who["initialize_refused"] = len(REFUSED)
            who["rounds"] = ROUNDS
            who["listening"] = list(LISTENING.values())
            who["resources_listed"] = len(LISTED)
            who["tools_listed"] = len(TOOLS_LISTED)
        return {"content": [{"type": "text", "text": json.dumps(who)}], "structuredContent": who}
    if name == "slow":
        token = (request.get("params", {}).get("_meta") or {}).get("progressToken")
        steps = 4
        for step in range(1, steps + 1):
            await asyncio.sleep(float(args.get("seconds", 1)) / steps)
            if token is not None:
                write(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": step, "total": steps, "message": f"step {step}"},
                    }
                )
        return {"content": [{"type": "text", "text": "done"}]}
    if name == "fail":
        return {"content": [{"type": "text", "text": "it failed, as asked"}], "isError": True}
    if name == "crash":
        os._exit(7)
    if name == "big":
        return {"content": [{"type": "text", "text": "x" * int(args.get("bytes", 1000))}]}
    raise KeyError(name)


async def main() -> None:
    if MODE == "exit":
        print("boom: missing configuration TOY_CONFIG", file=sys.stderr, flush=True)
        sys.exit(3)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout

    def write(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    if MODE == "garbage":
        out.write("Starting toy server v1.0 ...\nlistening on stdio\n")
        out.flush()
    running: dict[Any, asyncio.Task[None]] = {}

    async def handle(request: dict[str, Any]) -> None:
        method, rid, params = request.get("method"), request.get("id"), request.get("params") or {}
        try:
            if MODE == "modern" and method != "initialize":
                asked = (params.get("_meta") or {}).get(VERSION_KEY)
                if asked != MODERN:
                    data = {"supported": [MODERN], "requested": asked}
                    error = {"code": -32022, "message": "Unsupported protocol version", "data": data}
                    write({"jsonrpc": "2.0", "id": rid, "error": error})
                    return
            if method == "initialize" and MODE == "modern":
                REFUSED.append(rid)
                error = {"code": -32601, "message": "Method not found: initialize"}
                write({"jsonrpc": "2.0", "id": rid, "error": error})
                return
            if method == "subscriptions/listen" and MODE == "modern":
                await listen(rid, params, write)
                return
            if method == "server/discover":
                result: dict[str, Any] = {
                    "resultType": "complete",
                    "supportedVersions": [MODERN] if MODE == "modern" else [],
                    "capabilities": {
                        "tools": {"listChanged": True},
                        "resources": {"listChanged": True, "subscribe": True},
                    },
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "toy", "version": "1"}},
                }
                if MODE != "modern":
                    error = {"code": -32601, "message": "Method not found"}
                    write({"jsonrpc": "2.0", "id": rid, "error": error})
                    return
            elif method == "initialize":
                if MODE == "hang":
                    await asyncio.sleep(3600)
                if MODE == "slowstart":
                    await asyncio.sleep(float(os.environ.get("TOY_START_SECONDS", "4")))
                result = {
                    "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "toy", "version": "1"},
                }
            elif method == "tools/list":
                result = {"tools": tools()}
                if MODE == "modern" and "TOY_TOOLS_TTL_MS" in os.environ:
                    TOOLS_LISTED.append(len(GROWN))
                    result.update({"ttlMs": int(os.environ["TOY_TOOLS_TTL_MS"]), "cacheScope": "public"})
            elif method == "resources/list" and MODE == "modern":
                result = resources()
            elif method == "tools/call" and MODE == "modern" and (missing := _missing_capability(params)):
                # As a 2026-07-28 server may (SEP-2575): it will ask for these, so it refuses a client without them.
                data = {"requiredCapabilities": {missing: {}}}
                error = {"code": -32021, "message": f"Missing required client capability: {missing}", "data": data}
                write({"jsonrpc": "2.0", "id": rid, "error": error})
                return
            elif method == "tools/call":
                result = await call(params.get("name", ""), params.get("arguments") or {}, request, write)
            elif method == "ping":
                result = {}
            else:
                write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
                return
            if MODE == "modern":
                result.setdefault("resultType", "complete")
            write({"jsonrpc": "2.0", "id": rid, "result": result})
        except KeyError as exc:
            write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"unknown tool {exc}"}})
        finally:
            running.pop(rid, None)

    while line := await reader.readline():
        message = json.loads(line)
        if "id" in message and "method" in message:
            running[message["id"]] = asyncio.create_task(handle(message))
        elif message.get("method") == "notifications/cancelled":
            task = running.get((message.get("params") or {}).get("requestId"))
            if task is not None:
                CANCELLED.append(message["params"]["requestId"])
                task.cancel()


CUT: dict[str, tuple[float, dict[str, Any]]] = {}  # event id -> when its stream was cut, the result still owed
RESUMED: list[dict[str, Any]] = []
SESSION = "toy-session-1"
# The standalone stream's events (`resumable` mode): (event id, message); the stream is cut after each delivery.
STANDALONE: list[tuple[str, dict[str, Any] | None]] = []
STANDALONE_CUT: dict[str, float] = {}  # the last event id a standalone stream carried -> when it was cut


async def serve_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """`resumable` mode: a bare HTTP/1.1 MCP server, one request per connection."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    verb = head[0].partition(" ")[0]
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
    body = await reader.readexactly(int(fields.get("content-length", "0")))

    def send(status: str, kind: str, payload: bytes) -> None:
        writer.write(f"HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {len(payload)}\r\n".encode())
        writer.write(b"connection: close\r\n\r\n" + payload)

    def event(event_id: str, message: dict[str, Any] | None = None, retry: str = "") -> bytes:
        return f"id: {event_id}\n{retry}data: {json.dumps(message) if message else ''}\n\n".encode()

    loop = asyncio.get_running_loop()
    if verb == "GET":
        asked = fields.get("last-event-id", "")
        if asked not in CUT:
            await standalone(asked, writer, event)
        else:
            cut_at, message = CUT.pop(asked)
            RESUMED.append({"last_event_id": asked, "after_ms": round((loop.time() - cut_at) * 1000)})
            send("200 OK", "text/event-stream", event(f"{asked}-done", message))
    else:
        request = json.loads(body)
        answers: list[dict[str, Any]] = []
        if "id" in request:
            params = request.get("params") or {}
            if request["method"] == "tools/call" and params.get("name") == "whoami":
                params = {**params, "name": "echo", "arguments": {"text": json.dumps(RESUMED)}}
            await handle_into(answers.append, {**request, "params": params})
        if not answers:
            send("202 Accepted", "text/plain", b"")
        elif request["method"] == "initialize":
            writer.write(f"HTTP/1.1 200 OK\r\nmcp-session-id: {SESSION}\r\n".encode())
            payload = json.dumps(answers[0]).encode()
            writer.write(f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n".encode())
            writer.write(b"connection: close\r\n\r\n" + payload)
        elif request["method"] == "tools/call":
            event_id = f"call-{request['id']}"
            CUT[event_id] = (loop.time(), answers[-1])  # after any progress
            retry = f"retry: {os.environ.get('TOY_RETRY_MS', '300')}\n"
            send("200 OK", "text/event-stream", event(event_id, retry=retry))  # cut: the result comes on the GET
        else:
            send("200 OK", "application/json", json.dumps(answers[0]).encode())
    await writer.drain()
    writer.close()


async def standalone(asked: str, writer: asyncio.StreamWriter, event: Any) -> None:
    """`resumable` mode's standalone stream: a first GET gets a priming event, a GET resuming from `asked` the events
    after it; then the stream is cut (after `retry`, the client comes back with the last id it saw)."""
    loop = asyncio.get_running_loop()
    if asked:
        cut_at = STANDALONE_CUT.pop(asked, None)  # None: another stream from the same id is still open
        after_ms = round((loop.time() - cut_at) * 1000) if cut_at is not None else None
        RESUMED.append({"last_event_id": asked, "after_ms": after_ms})
    if not STANDALONE:
        STANDALONE.append(("get-0", None))
    ids = [event_id for event_id, _ in STANDALONE]
    start = ids.index(asked) + 1 if asked in ids else len(ids) - 1  # a first GET: the priming event only
    retry = f"retry: {os.environ.get('TOY_RETRY_MS', '300')}\n"
    frames = b"".join(event(event_id, message, retry) for event_id, message in STANDALONE[start:])
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n" + frames)
    await writer.drain()
    await asyncio.sleep(0.2)  # open a moment: what is told meanwhile waits for the next resumption
    STANDALONE_CUT[STANDALONE[-1][0]] = loop.time()


def touch_standalone(uri: str) -> dict[str, Any]:
    """`resumable` mode: tell, on the standalone stream, that `uri` was updated."""
    message = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
    STANDALONE.append((f"get-{len(STANDALONE)}", message))
    return {"content": [{"type": "text", "text": f"{uri} updated on the standalone stream"}]}


async def handle_into(write: Any, request: dict[str, Any]) -> None:
    method, rid, params = request.get("method"), request.get("id"), request.get("params") or {}
    if method == "initialize":
        version = params.get("protocolVersion", "2025-06-18")
        info = {"name": "toy", "version": "1"}
        write(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}, "resources": {"subscribe": True}},
                    "serverInfo": info,
                },
            }
        )
    elif method == "tools/list":
        write({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools()}})
    elif method == "tools/call" and params.get("name") == "touch":
        write({"jsonrpc": "2.0", "id": rid, "result": touch_standalone(str((params.get("arguments") or {})["uri"]))})
    elif method == "tools/call":
        write(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": await call(params.get("name", ""), params.get("arguments") or {}, request, write),
            }
        )
    elif method in ("ping", "resources/subscribe", "resources/unsubscribe"):
        write({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})


async def serve_resumable(port: int) -> None:
    server = await asyncio.start_server(serve_http, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve_resumable(int(sys.argv[2])) if MODE == "resumable" else main())
