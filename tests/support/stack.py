"""Starts a real `jarvis up` process on free loopback ports and talks to it like a user would."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client

from jarvis.aggregator.discovery.embedding import model_cache

REPO = Path(__file__).resolve().parents[2]


_HANDED_OUT: set[int] = set()


def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A loopback port free now, chosen below the kernel's ephemeral range.

    A port the kernel picked for a port-0 bind is free again once that socket closes, and the kernel may give it
    to the next port-0 bind before the caller uses it: `jarvis up` binds its embedded gRPC servers to port 0
    before its HTTP port, and once took the very port chosen for it ("address already in use"). Ports below
    the ephemeral range are never handed out that way.
    """
    floor = _ephemeral_floor()
    for _ in range(200):
        port = random.randrange(max(1024, floor - 12_000), floor)
        if port in _HANDED_OUT:  # two calls in a row must not name one port, whether or not it is in use yet
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError(f"no free loopback port below {floor}")


def jarvis_cli(
    *args: str, data_dir: Path, env: dict[str, str] | None = None, check: bool = True, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the real `jarvis` command line."""
    full_env = {**os.environ, "JARVIS_LOG_LEVEL": "WARNING", **(env or {})}
    result = subprocess.run(
        [sys.executable, "-m", "jarvis.cli", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"jarvis {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


@dataclass
class RunningJarvis:
    data_dir: Path
    port: int
    process: subprocess.Popen[str]
    log_path: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/mcp/jarvis") -> str:
        return self.base_url + path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return jarvis_cli(*args, data_dir=self.data_dir, env=self.extra_env, check=check)

    def create_token(self, *scopes: str, name: str = "test", expires_in: int = 0) -> str:
        args = ["token", "create", "--name", name, "--expires-in", str(expires_in)]
        for scope in scopes:
            args += ["--scope", scope]
        return self.cli(*args).stdout.strip()


def stop_processes(processes: list[subprocess.Popen[Any]], grace: float = 20) -> None:
    """SIGTERM to every process at once, then each given `grace` seconds to finish before it is killed: services that
    shut down in order (a worker finishing its task) do so side by side."""
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def start_jarvis(
    data_dir: Path, *extra_args: str, env: dict[str, str] | None = None, timeout: float = 180, port: int = 0
) -> RunningJarvis:
    """`jarvis up` on `port` (a free one when 0: a test names its own when a URL must be known beforehand)."""
    port = port or free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir / "jarvis-up.log"
    # The embedding model's built graph is shared by every test's Jarvis, whatever HOME a test gives it.
    full_env = {"JARVIS_MODEL_CACHE": str(model_cache()), **os.environ, **(env or {})}
    process = subprocess.Popen(
        [sys.executable, "-m", "jarvis.cli", "--data-dir", str(data_dir), "up", "--port", str(port), *extra_args],
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
        text=True,
        env=full_env,
    )
    running = RunningJarvis(data_dir, port, process, log_path, env or {})
    wait_healthy(running, timeout)
    return running


def wait_for_url(url: str, timeout: float = 60) -> None:
    """Poll until `url` answers 200 (a process started elsewhere is ready)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx2.get(url, timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer within {timeout}s")


def wait_healthy(running: RunningJarvis, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if running.process.poll() is not None:
            raise AssertionError(f"jarvis up exited with {running.process.returncode}:\n{running.log()}")
        try:
            if httpx2.get(running.base_url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.1)
    running.stop()
    raise AssertionError(f"jarvis up did not become healthy in {timeout}s:\n{running.log()}")


@asynccontextmanager
async def mcp_client(url: str, token: str | None = None, mode: str = "legacy") -> AsyncIterator[Client]:
    """The SDK's own client over real streamable HTTP, optionally with a bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        from mcp.client.streamable_http import streamable_http_client

        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


def result_json(result: Any) -> Any:
    """The JSON payload of a successful tool result."""
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result: Any) -> str:
    """The message of a tool execution error."""
    assert result.is_error, f"expected a tool error, got {result.content[0].text[:300]}"
    return str(result.content[0].text)


def gate_refusal(response: httpx2.Response) -> str | None:
    """The gate's refusal of a tools/call its token may not make: a tool error naming the scopes, or None.

    The gate answers such a call itself (it never reaches the MCP layer) as a tool execution error,
    because SDK clients drop the bodies of HTTP 403s and the agent would never learn why.
    """
    if response.status_code != 200 or not response.headers.get("content-type", "").startswith("application/json"):
        return None
    result = response.json().get("result") or {}
    if result.get("isError") and (result.get("structuredContent") or {}).get("error") == "insufficient_scope":
        return str(result["content"][0]["text"])
    return None
