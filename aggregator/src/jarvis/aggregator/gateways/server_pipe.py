"""The runtime's AttachServer stream, typed: one container-image MCP server's stdio on one gRPC call.

The caller sends the start request first, then stdin lines; the runtime answers that the container started, then its
stdout, stderr and exit. Ending the call makes the runtime kill and remove the container.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.common.grpc_errors import error_from_rpc


class PipeBroken(Exception):
    """The call ended under the caller: `cancelled` when this side cancelled it, else `detail` says why."""

    def __init__(self, detail: str, *, cancelled: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.cancelled = cancelled


@dataclass(frozen=True)
class Stdout:
    data: bytes


@dataclass(frozen=True)
class Stderr:
    data: bytes


@dataclass(frozen=True)
class Exited:
    exit_code: int | None  # None: unknown (removed before it reported one)
    detail: str


Output = Stdout | Stderr | Exited


class ServerPipe:
    """One AttachServer call. Writes must not overlap (the caller serialises them); reads come from one task."""

    def __init__(self, call: Any) -> None:
        self._call = call

    async def start(self, server: str, image: str, args: tuple[str, ...], env: dict[str, str]) -> str:
        """Start the container; its id. OSError with the runtime's reason when it cannot start."""
        start = pb.ServerStart(server=server, image=image, args=list(args), env=env)
        try:
            await self._call.write(pb.ServerInput(start=start))
            first = await self._call.read()
        except grpc.aio.AioRpcError as exc:
            self.cancel()
            raise OSError(f"cannot run image '{image}': {error_from_rpc(exc, 'runtime')}") from None
        except BaseException:
            self.cancel()
            raise
        if first is grpc.aio.EOF or first.WhichOneof("output") != "started":
            self.cancel()
            raise OSError(f"cannot run image '{image}': the runtime ended the stream without starting it")
        return str(first.started.container_id)

    async def write_stdin(self, data: bytes) -> None:
        try:
            await self._call.write(pb.ServerInput(stdin=data))
        except (grpc.aio.AioRpcError, grpc.aio.UsageError) as exc:
            raise PipeBroken("the stream to the runtime ended") from exc

    async def end_stdin(self) -> None:
        """No more input: the server reads end-of-file. A call that already ended needs none."""
        try:
            await self._call.done_writing()
        except (grpc.aio.AioRpcError, grpc.aio.UsageError):
            return

    async def read(self) -> Output | None:
        """The next output, or None at the end of the stream; PipeBroken when the call fails."""
        while True:
            try:
                message = await self._call.read()
            except grpc.aio.AioRpcError as exc:
                cancelled = exc.code() == grpc.StatusCode.CANCELLED
                raise PipeBroken(
                    f"lost its stream from the runtime ({error_from_rpc(exc, 'runtime')})", cancelled=cancelled
                ) from None
            if message is grpc.aio.EOF:
                return None
            kind = message.WhichOneof("output")
            if kind == "stdout":
                return Stdout(message.stdout)
            if kind == "stderr":
                return Stderr(message.stderr)
            if kind == "exited":
                code = message.exited.exit_code
                return Exited(code if code >= 0 else None, message.exited.detail)
            # Another `started` or a kind this aggregator does not know: nothing to route.

    def cancel(self) -> None:
        self._call.cancel()
