"""One `subscriptions/listen` stream (2026-07-28) of a proxy surface: the acknowledgement first, then each event.

The SDK's `ListenHandler` serves the core kinds only: its acknowledgement drops the tasks extension's `taskIds`
and its filter cannot carry a task's status. This stream does what it does (acknowledge the honored filter, stamp
every frame with the subscription id, deliver only what was asked, end a stream whose client stopped reading) and
also acknowledges the task handles Jarvis agreed to watch and delivers their `notifications/tasks` frames.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, ServerEvent, event_matches, event_to_notification
from pydantic import BaseModel

log = logging.getLogger(__name__)

MAX_BUFFERED_EVENTS = 1024  # as the SDK's ListenHandler bounds a stream's backlog
TASK_STATUS = "notifications/tasks"


@dataclass(frozen=True)
class TaskStatus:
    """A task's state as the caller knows the task (its handle), for a `notifications/tasks` frame."""

    params: dict[str, Any]


Event = ServerEvent | TaskStatus


class _Frame(BaseModel):
    """A notification the SDK has no model for (an extension's), as the wire has it."""

    method: str
    params: dict[str, Any]


def honored(requested: types.SubscriptionFilter, tasks: list[str]) -> types.SubscriptionFilter:
    """What the stream will deliver: every core kind asked for, and of the task handles those in `tasks`."""
    fields: dict[str, Any] = {
        "toolsListChanged": True if requested.tools_list_changed else None,
        "promptsListChanged": True if requested.prompts_list_changed else None,
        "resourcesListChanged": True if requested.resources_list_changed else None,
        "resourceSubscriptions": list(requested.resource_subscriptions or ()) or None,
        "taskIds": tasks if "taskIds" in (requested.model_extra or {}) else None,
    }
    return types.SubscriptionFilter.model_validate({k: v for k, v in fields.items() if v is not None})


class ListenStream:
    """Events published to `deliver` (from any task) go out on the stream that `serve` holds open."""

    def __init__(self, filter: types.SubscriptionFilter) -> None:
        self.filter = filter
        self._uris = frozenset(filter.resource_subscriptions or ())
        self._send, self._receive = anyio.create_memory_object_stream[Event](MAX_BUFFERED_EVENTS)

    def deliver(self, event: Event) -> None:
        if not isinstance(event, TaskStatus) and not event_matches(self.filter, self._uris, event):
            return
        try:
            self._send.send_nowait(event)
        except anyio.ClosedResourceError:
            pass  # the stream is ending
        except anyio.WouldBlock:
            # No replay in this protocol: the client re-listens and reads again, so ending loses nothing more.
            log.warning("listen stream backlog full; ending the stream")
            self._send.close()

    async def serve(self, ctx: ServerRequestContext[Any]) -> types.SubscriptionsListenResult:
        if ctx.request_id is None:
            raise MCPError(types.INVALID_REQUEST, "subscriptions/listen requires a request id")
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        ack = {"notifications": self.filter.model_dump(by_alias=True, exclude_none=True), "_meta": meta}
        try:
            await _send(ctx, "notifications/subscriptions/acknowledged", ack)
            async for event in self._receive:
                if isinstance(event, TaskStatus):
                    await _send(ctx, TASK_STATUS, {**event.params, "_meta": meta})
                else:
                    await ctx.session.send_notification(event_to_notification(event, meta), ctx.request_id)
        finally:
            self._send.close()
            self._receive.close()
        return types.SubscriptionsListenResult(_meta=meta)


async def _send(ctx: ServerRequestContext[Any], method: str, params: dict[str, Any]) -> None:
    # The session sends any model with a method and params as the wire has them; it has none for these.
    await ctx.session.send_notification(cast(Any, _Frame(method=method, params=params)), ctx.request_id)
