"""A container's stdin on the runtime's gRPC stream (downstream/transport/container.py's ContainerStdin): one write
at a time, in the order sent, and nothing after its end. The e2e tests (test_downstream_container.py) run it against the
runtime and a real container; here a recording stand-in for the stream shows the order it is given."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from jarvis.aggregator.downstream.transport.container import ContainerStdin
from jarvis.aggregator.gateways.server_pipe import ServerPipe

pytestmark = pytest.mark.anyio


class _Stream:
    """Like the `grpc.aio` stream-stream call a ServerPipe wraps: a write yields to the loop, and two writes at once
    are an error."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.writing = False
        self.done = 0

    async def write(self, message: object) -> None:
        assert not self.writing, "two writes at once"
        self.writing = True
        await anyio.sleep(0.01)
        self.written.append(message.stdin)  # type: ignore[attr-defined]
        self.writing = False

    async def done_writing(self) -> None:
        self.done += 1


async def test_writes_go_one_at_a_time_in_the_order_sent() -> None:
    stream = _Stream()
    stdin = ContainerStdin(ServerPipe(stream))
    initialized = SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(stdin.send, initialized)
        await anyio.sleep(0)  # the session's notification is being written
        tg.start_soon(stdin.line, b"first\n")
        await anyio.sleep(0)
        stdin.line_nowait(b"second\n")
    with anyio.fail_after(2):
        while len(stream.written) < 3:
            await anyio.sleep(0.01)
    assert stream.written == [b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n', b"first\n", b"second\n"]


async def test_after_its_end_nothing_more_is_written() -> None:
    stream = _Stream()
    stdin = ContainerStdin(ServerPipe(stream))
    await stdin.end()
    await stdin.end()
    assert stream.done == 1
    with pytest.raises(anyio.ClosedResourceError):
        await stdin.line(b"late\n")
    stdin.line_nowait(b"late notice\n")  # a cancellation notice after the end is dropped quietly
    await anyio.sleep(0.05)
    assert stream.written == []
