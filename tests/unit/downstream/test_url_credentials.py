"""Credentials in URLs stay out of what Jarvis keeps and shows: the audit log's arguments, a server's last error
and its log lines (issue 34, item 2). The tool answers are covered end to end in
tests/e2e/test_security_url_credentials.py.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import pytest

from jarvis.aggregator.audit import redact
from jarvis.aggregator.downstream.hosting.supervisor import HostOptions, ServerHost
from jarvis.aggregator.downstream.hosting.tools import ServedTools
from jarvis.aggregator.downstream.transport.connection import Connection, LaunchPlan
from jarvis.aggregator.downstream.transport.stdio import StdioSpec

CANARY = "canary-url-secret"


def test_audit_keeps_urls_without_their_credentials() -> None:
    schema: dict[str, Any] = {"properties": {n: {} for n in ("action", "name", "type", "url", "source_url")}}
    long_path = "/" + "p" * 300
    kept = redact(
        {
            "action": "create",
            "name": "remote",
            "type": "streamable-http",
            "url": f"https://alice:{CANARY}@mcp.example.com/mcp?api_key={CANARY}&region=eu",
            # Masked before the 200-character cut, which would otherwise leave `user:password` without its `@`.
            "source_url": f"https://x-access-token:{CANARY}@github.com/o/r.git{long_path}",
        },
        schema,
    )
    assert kept["url"] == "https://***@mcp.example.com/mcp?api_key=***&region=eu"
    assert kept["source_url"].startswith("https://***@github.com/o/r.git/ppp")
    assert kept["source_url"].endswith("…")
    assert CANARY not in str(kept)
    assert kept["name"] == "remote"


async def _no_tools(_host: ServerHost, _connection: Connection) -> ServedTools:
    return ServedTools()


@pytest.mark.anyio
async def test_a_servers_last_error_and_log_line_mask_the_urls_they_quote(caplog: pytest.LogCaptureFixture) -> None:
    """A server that fails saying where it could not connect: what `jarvis_server list|info` and
    `jarvis_check_status` show of it (its snapshot) and the warning logged keep no credential."""
    caplog.set_level(logging.INFO)
    code = (
        "import sys; sys.stderr.write("
        f"'cannot reach https://alice:{CANARY}@db.example.com/x?token={CANARY}&db=main\\n'); raise SystemExit(3)"
    )
    plan = LaunchPlan("leaky", "stdio", stdio=StdioSpec(server="leaky", command=sys.executable, args=("-c", code)))
    server = ServerHost("leaky", plan, HostOptions(init_timeout=5), _no_tools, lambda _name, _lists: None)
    server.start_eagerly()
    try:
        for _ in range(200):
            if server.snapshot().start_failures >= 1:
                break
            await asyncio.sleep(0.05)
    finally:
        await server.stop()
    shown = server.snapshot().last_error
    assert "cannot reach https://***@db.example.com/x?token=***&db=main" in shown, shown
    assert CANARY not in shown
    assert "leaky failed" in caplog.text
    assert CANARY not in caplog.text
