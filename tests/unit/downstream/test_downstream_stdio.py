"""The stdio transport against a real child process: framing limits, noise on stdout, exit reporting."""

from __future__ import annotations

import sys

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from jarvis.aggregator.downstream.transport.stdio import StdioSpec, stdio_transport

pytestmark = pytest.mark.anyio

# Prints noise, a response too big to accept, then a normal response, then exits with a message.
SCRIPT = r"""
import sys
sys.stdout.write("hello, I am a banner\n")
sys.stdout.write('{"jsonrpc": "2.0", "id": 7, "result": {"blob": "' + "x" * 5000 + '"}}\n')
sys.stdout.write('{"jsonrpc": "2.0", "id": 8, "result": {}}\n')
sys.stdout.flush()
print("bye from stderr", file=sys.stderr, flush=True)
sys.exit(4)
"""


async def test_oversized_and_garbage_lines_are_contained() -> None:
    spec = StdioSpec("noisy", sys.executable, ("-c", SCRIPT), max_message_bytes=1000)
    async with stdio_transport(spec) as (read, _write, child):
        received = []
        with anyio.fail_after(10):
            for _ in range(2):
                message = await read.receive()
                assert isinstance(message, SessionMessage)
                received.append(message.message)
            await child.exited.wait()
    error, ok = received
    assert isinstance(error, types.JSONRPCError)
    assert error.id == 7
    assert "noisy" in error.error.message
    assert "1,000 bytes" in error.error.message
    assert isinstance(ok, types.JSONRPCResponse)
    assert ok.id == 8
    assert child.garbage_lines == 1
    assert child.oversized == 1
    description = child.describe_exit()
    assert "exited with code 4" in description
    assert "bye from stderr" in description
    assert "banner" in description


async def test_a_missing_command_is_a_plain_error() -> None:
    with pytest.raises(OSError, match="not found"):
        async with stdio_transport(StdioSpec("ghost", "/no/such/binary")):
            pass


async def test_http_servers_resolving_to_metadata_addresses_are_refused() -> None:
    from jarvis.aggregator.downstream.transport.addresses import refuse_forbidden_address

    with pytest.raises(ConnectionError, match="SSRF"):
        await refuse_forbidden_address("http://169.254.169.254/latest/meta-data")
    await refuse_forbidden_address("http://127.0.0.1:9/mcp")  # loopback is a legitimate place for a server
