"""`subscriptions/listen` (2026-07-28) on a proxy surface: its resource URIs watched at their servers, and the status
of its tasks (`taskIds`, the caller's own handles) relayed from theirs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from jarvis.aggregator.downstream.hosting.naming import namespaced_uri
from jarvis.aggregator.downstream.proxy.aggregate import Aggregate
from jarvis.aggregator.downstream.proxy.listen import ListenStream, honored
from jarvis.aggregator.downstream.proxy.targets import Targets
from jarvis.aggregator.downstream.proxy.task_notices import TaskNotices
from jarvis.aggregator.downstream.proxy.tasks import SurfaceTasks
from jarvis.aggregator.downstream.proxy.watches import ResourceWatches


class Subscriptions:
    def __init__(
        self,
        targets: Targets,
        aggregate: Aggregate,
        tasks: SurfaceTasks,
        task_notices: TaskNotices,
        watches: ResourceWatches,
    ) -> None:
        self.targets = targets
        self.aggregate = aggregate
        self.tasks = tasks
        self.task_notices = task_notices
        self.watches = watches

    async def listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        target = self.targets.target_of(ctx)
        uris = params.notifications.resource_subscriptions or []
        single = self.targets.single_server(target)
        if single is not None:
            present: Callable[[str, str], str] = _own_uri
            routes = [(single, uri) for uri in uris]
        else:
            present, routes = namespaced_uri, [self.aggregate.route_uri(ctx, target, uri) for uri in uris]
        handles = self.tasks.watched(ctx, target, params.notifications)
        stream = ListenStream(honored(params.notifications, list(handles.values())))
        async with self.task_notices.watching(stream, handles, namespaced=single is None):
            return await self.watches.listen(ctx, stream, target, present, routes)


def _own_uri(server: str, uri: str) -> str:
    return uri
