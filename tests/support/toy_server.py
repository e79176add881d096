"""A tiny MCP server over stdio, written as raw JSON-RPC so tests can make it misbehave on purpose.

    python toy_server.py MODE

MODE: `ok` (well behaved), `exit` (dies before initialize, with a message on stderr), `hang` (never
answers initialize), `garbage` (prints non-JSON lines on stdout, then behaves), `badschema` (lists
tools whose schemas are broken). Environment: TOY_NAME (reported by `whoami`), TOY_DESCRIPTION_FILE
(the `echo` tool's description is read from it at start, so a test can change it between runs).
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


def _description() -> str:
    path = os.environ.get("TOY_DESCRIPTION_FILE")
    return Path(path).read_text().strip() if path else "Echo the text back"


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
    return listed


async def call(name: str, args: dict[str, Any], request: dict[str, Any], write: Any) -> dict[str, Any]:
    if name == "echo":
        return {"content": [{"type": "text", "text": str(args.get("text", ""))}]}
    if name == "whoami":
        who = {"name": os.environ.get("TOY_NAME", "toy"), "pid": os.getpid(), "cancelled": len(CANCELLED)}
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
            if method == "initialize":
                if MODE == "hang":
                    await asyncio.sleep(3600)
                result: dict[str, Any] = {
                    "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "toy", "version": "1"},
                }
            elif method == "tools/list":
                result = {"tools": tools()}
            elif method == "tools/call":
                result = await call(params.get("name", ""), params.get("arguments") or {}, request, write)
            elif method == "ping":
                result = {}
            else:
                write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
                return
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


if __name__ == "__main__":
    asyncio.run(main())
