"""Tasks (SEP-2663, `io.modelcontextprotocol/tasks`) through a profile or share surface.

A server may answer a `tools/call` with a `CreateTaskResult` naming the task by its own id; the caller then
polls `tasks/get`, answers `tasks/update` and sends `tasks/cancel` with that id, none of which names a tool,
so nothing in them says which server holds the task. Jarvis hands the caller a handle that says it itself:

    jt1.<server>.<server's task id>.<seal>        (each part base64url, unpadded)

The seal is an HMAC over the surface kind, its target (profile or share), the server, the task id and the
caller's token id, under a key derived from the deployment's internal-plane credential, which every
aggregator process and replica already has. So any process can route a handle without a map in memory or
Redis (issue 13 item 5), and a handle that was altered, or is used by another token, on another surface or
for a server the surface no longer holds, is answered as the spec answers an unknown task (-32602) without
reaching any server. The server's own id stays inside: Jarvis never invents task state, it only routes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from jarvis.aggregator.downstream.proxy.content import namespaced_task
from jarvis.aggregator.downstream.proxy.targets import Targets
from jarvis.aggregator.downstream.proxy.versions import for_caller
from jarvis.aggregator.downstream.transport.wire import TASK_METHODS
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.request import principal_of
from jarvis.common.errors import JarvisError
from jarvis.common.internal_plane import InternalPlane

TASKS = "io.modelcontextprotocol/tasks"
_VERSION = "jt1"
_SEAL_BYTES = 16
_UNKNOWN = "Failed to retrieve task: Task not found"


@dataclass(frozen=True)
class TaskRef:
    """Where a caller's task lives: the server and the id that server gave it."""

    server: str
    task_id: str


class TaskHandles:
    """Seals task handles to (surface, target, server, task, caller) and opens them again."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def for_plane(cls, plane: InternalPlane) -> TaskHandles:
        """Keyed by the internal-plane credential, so every process of the deployment opens every handle;
        without one (a loopback-only aggregator run open) a key of this process's own."""
        if plane.token:
            return cls(hmac.new(plane.token.encode(), b"jarvis task handles v1", hashlib.sha256).digest())
        return cls(secrets.token_bytes(32))

    def seal(self, kind: str, target: str, caller: str, ref: TaskRef) -> str:
        parts = (_b64(ref.server.encode()), _b64(ref.task_id.encode()))
        return ".".join((_VERSION, *parts, _b64(self._mac(kind, target, caller, ref))))

    def open(self, handle: str, kind: str, target: str, caller: str) -> TaskRef | None:
        """The task `handle` names, if this caller was given it on this surface; None otherwise."""
        parts = handle.split(".")
        if len(parts) != 4 or parts[0] != _VERSION:
            return None
        try:
            ref = TaskRef(_unb64(parts[1]).decode(), _unb64(parts[2]).decode())
            seal = _unb64(parts[3])
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        return ref if hmac.compare_digest(seal, self._mac(kind, target, caller, ref)) else None

    def _mac(self, kind: str, target: str, caller: str, ref: TaskRef) -> bytes:
        # Length-prefixed fields: no two different tuples serialize alike.
        fields = (kind, target, caller, ref.server, ref.task_id)
        message = b"".join(len(f).to_bytes(4, "big") + f for f in (field.encode() for field in fields))
        return hmac.new(self._key, message, hashlib.sha256).digest()[:_SEAL_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class TaskUpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


def is_task(result: dict[str, Any]) -> bool:
    return result.get("resultType") == "task"


class SurfaceTasks:
    """The task methods of one proxy surface, and the handles its tool calls hand out."""

    def __init__(self, targets: Targets, handles: TaskHandles) -> None:
        self.targets = targets
        self.handles = handles

    def install(self, server: Server[Any]) -> None:
        """Advertise the extension in server/discover (any server behind the surface may answer a call with a task)
        and register the task methods."""
        server.extensions[TASKS] = {}
        for method in TASK_METHODS:
            params_type = TaskUpdateParams if method == "tasks/update" else TaskParams
            server.add_request_handler(method, params_type, self._forwarder(method))

    def handed_out(self, target: str, principal: Principal, server: str, result: dict[str, Any]) -> dict[str, Any]:
        """A server's CreateTaskResult as `principal` gets it on `target`: the task id replaced by a sealed handle."""
        task_id = result.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise JarvisError(f"server '{server}' answered with a task that has no taskId")
        handle = self.handles.seal(self.targets.name, target, principal.token_id, TaskRef(server, task_id))
        return {**result, "taskId": handle}

    def watched(
        self, ctx: ServerRequestContext[Any], target: str, notifications: types.SubscriptionFilter
    ) -> dict[TaskRef, str]:
        """The tasks a listen stream asks to hear of (`taskIds`) that are the caller's on this surface, with the
        handle it knows each by. A handle that does not open for it is left out of the acknowledgement, as a server
        leaves out a task it does not know: it is not told whether the task exists."""
        asked = (notifications.model_extra or {}).get("taskIds")
        if asked is None:
            return {}
        require_client_extension(ctx, TASKS)  # SEP-2663: -32021 for a caller that did not declare the extension
        if not isinstance(asked, list):
            raise MCPError(types.INVALID_PARAMS, "taskIds must be a list of task ids")
        caller = principal_of(ctx).token_id
        watched: dict[TaskRef, str] = {}
        for handle in asked:
            ref = self.handles.open(handle, self.targets.name, target, caller) if isinstance(handle, str) else None
            if ref is not None and ref.server in self.targets.servers_of(target):
                watched[ref] = handle
        return watched

    def _forwarder(self, method: str) -> Callable[[ServerRequestContext[Any], Any], Awaitable[dict[str, Any]]]:
        async def forward(ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
            # The spec's order: a caller that did not declare the extension is told so (-32021) whatever the id.
            require_client_extension(ctx, TASKS)
            _check_name_header(ctx, params.task_id)
            target = self.targets.target_of(ctx)
            ref = self.handles.open(params.task_id, self.targets.name, target, principal_of(ctx).token_id)
            if ref is None or ref.server not in self.targets.servers_of(target):
                raise MCPError(types.INVALID_PARAMS, _UNKNOWN)
            raw = dict(ctx.params or {})
            raw["taskId"] = ref.task_id
            # The caller's `_meta` (version, capabilities with the extension) is what the server gates on.
            meta = raw.pop("_meta", None) or {}
            raw["_meta"] = {key: value for key, value in meta.items() if key != "progressToken"}
            try:
                result = await self.targets.host.forward(ref.server, method, raw, ctx.protocol_version)
            except JarvisError as exc:
                raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
            if result.get("taskId") == ref.task_id:  # tasks/get states the task: by the caller's handle
                result = {**result, "taskId": params.task_id}
            if self.targets.single_server(target) is None:
                result = namespaced_task(ref.server, result)
            return for_caller(result, ctx.protocol_version)

        return forward


def _check_name_header(ctx: ServerRequestContext[Any], handle: str) -> None:
    """SEP-2663 extends SEP-2243's `Mcp-Name` to tasks/*, carrying `taskId`; the SDK checks core methods only."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return
    name = decode_header_value(headers.get(MCP_NAME_HEADER))
    if name is None or name.strip() != handle:
        raise MCPError(types.HEADER_MISMATCH, f"the {MCP_NAME_HEADER} header does not match params.taskId")
