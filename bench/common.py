"""Shared pieces of the benchmarks: a real `jarvis up`, a bare SDK server, concurrent MCP clients."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.stack import RunningJarvis, free_port, mcp_client, start_jarvis  # noqa: E402

__all__ = [
    "FULL_COLLECTIONS",
    "LoadResult",
    "PauseLog",
    "RunningJarvis",
    "bare_server",
    "mcp_client",
    "run_load",
    "start_jarvis",
    "temp_jarvis",
]


@dataclass
class LoadResult:
    label: str
    calls: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def per_second(self) -> float:
        return self.calls / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def line(self) -> str:
        return (
            f"{self.label:<34} {self.per_second:8.1f} calls/s   p50 {self.percentile(0.5):7.2f} ms   "
            f"p99 {self.percentile(0.99):7.2f} ms   errors {self.errors}"
        )


async def run_load(
    label: str, url: str, clients: int, calls_per_client: int, call: Callable[..., Awaitable[object]], warmup: int = 20
) -> LoadResult:
    """`clients` concurrent MCP sessions, each making `calls_per_client` sequential calls."""
    latencies: list[float] = []
    errors = 0

    async def one_client() -> None:
        nonlocal errors
        async with mcp_client(url) as client:
            for _ in range(warmup):
                await call(client)
            await barrier.wait()
            for _ in range(calls_per_client):
                started = time.perf_counter()
                result = await call(client)
                latencies.append((time.perf_counter() - started) * 1000)
                if getattr(result, "is_error", False):
                    errors += 1

    barrier = asyncio.Barrier(clients + 1)
    tasks = [asyncio.create_task(one_client()) for _ in range(clients)]
    await barrier.wait()
    started = time.perf_counter()
    await asyncio.gather(*tasks)
    return LoadResult(label, len(latencies), errors, time.perf_counter() - started, latencies)


# Code a benchmark's SDK server runs first: `log_full_collections(path)` appends to `path` how long each of its full
# (generation 2) garbage collections stopped it, in milliseconds. An SDK server's full collection visits every object
# its imports made (Jarvis freezes those at start), and those pauses are what its p99 at 16 clients is made of.
FULL_COLLECTIONS = """
import gc, time

def log_full_collections(path):
    log, began = open(path, "a", buffering=1), [0.0]

    def timed(phase, info):
        if info["generation"] == 2:
            if phase == "start":
                began[0] = time.perf_counter()
            else:
                log.write(f"{(time.perf_counter() - began[0]) * 1000:.3f}\\n")

    gc.callbacks.append(timed)
"""

BARE_SERVER = (
    FULL_COLLECTIONS
    + """
import sys, uvicorn, mcp_types as types
from mcp.server import Server

log_full_collections(sys.argv[3])

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="ping", description="trivial",
                                 input_schema={"type": "object", "properties": {}})])

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text="pong")])

app = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool).streamable_http_app(
    json_response=sys.argv[2] == "json")
if sys.argv[5] == "modern":  # 2026-07-28 only: `initialize` is no method of it, as that version allows
    served = app

    async def app(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await served(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        if b'"method":"initialize"' in body.replace(b" ", b""):
            answer = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: initialize"}}'
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            return await send({"type": "http.response.body", "body": answer})
        sent = False

        async def again():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await served(scope, again, send)
if sys.argv[4] == "frozen":
    gc.freeze()  # what exists now is left out of every collection, as Jarvis does with its start-up heap
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""
)


class PauseLog:
    """The file a server running FULL_COLLECTIONS logs to; `read()` gives the pauses logged since the last read."""

    def __init__(self) -> None:
        self._file = tempfile.NamedTemporaryFile("r", suffix=".gc")  # noqa: SIM115 (closed by close())
        self.path = self._file.name

    def read(self) -> list[float]:
        return [float(line) for line in self._file.read().split()]

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> PauseLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class bare_server:
    """The mcp SDK's low-level server with one trivial tool, on its streamable HTTP app (SSE answers, the
    SDK's default, or JSON answers); `pauses` has its full collections. With `frozen`, its start-up heap is left
    out of its collections (`gc.freeze()`), so they stop it for far less: not how the SDK serves, a diagnosis."""

    def __init__(self, answers: str = "sse", *, frozen: bool = False, era: str = "dual") -> None:
        self.answers = answers
        self.heap = "frozen" if frozen else "default"
        self.era = era  # "modern": 2026-07-28 only (refuses `initialize`, so a client must use server/discover)
        self.pauses = PauseLog()

    def __enter__(self) -> str:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-c", BARE_SERVER, str(self.port), self.answers, self.pauses.path, self.heap, self.era]
        )
        import httpx2

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx2.get(f"http://127.0.0.1:{self.port}/mcp", timeout=1)
                break
            except httpx2.HTTPError:
                time.sleep(0.1)
        return f"http://127.0.0.1:{self.port}/mcp"

    def __exit__(self, *_: object) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.pauses.close()


class temp_jarvis:
    """`jarvis up` on a throwaway data dir."""

    def __init__(self, *args: str) -> None:
        self.args = args

    def __enter__(self) -> RunningJarvis:
        self.tmp = tempfile.TemporaryDirectory()
        self.running = start_jarvis(Path(self.tmp.name) / "data", *self.args, env={"HOME": self.tmp.name}, timeout=180)
        return self.running

    def __exit__(self, *_: object) -> None:
        self.running.stop()
        self.tmp.cleanup()


def median(values: list[float]) -> float:
    return statistics.median(values)
