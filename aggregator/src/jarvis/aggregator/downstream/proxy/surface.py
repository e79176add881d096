"""Profile and share surfaces: MCP servers whose tools are downstream servers' tools, proxied.

`/mcp/profile/<name>` serves exactly the tools of the profile's servers (`<server>__<tool>`, or
the tools' own names for an unprefixed one-server profile), and their resources, prompts and
completions (transparent.py, aggregate.py); `/share/<server>/mcp` serves one server under its own
names. One low-level MCP server per kind serves every name: the name comes from the request path,
so a new profile needs no restart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

import mcp_types as types
from mcp.server import NotificationOptions, Server
from mcp.server.context import ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.methods import is_input_required
from pydantic import ValidationError

from jarvis.aggregator.calls.call import ToolCall, is_error
from jarvis.aggregator.calls.pipeline import CallPipeline
from jarvis.aggregator.downstream.auth.person import person_of
from jarvis.aggregator.downstream.hosting.exposure import ExposedTool
from jarvis.aggregator.downstream.hosting.naming import SEPARATOR as NAMESPACE_SEPARATOR
from jarvis.aggregator.downstream.hosting.naming import namespaced
from jarvis.aggregator.downstream.hosting.routing import downstream_route
from jarvis.aggregator.downstream.hosting.supervisor import FAILING, RUNNING
from jarvis.aggregator.downstream.hosting.tools import ServedTools
from jarvis.aggregator.downstream.proxy.aggregate import Aggregate, caller_session_id
from jarvis.aggregator.downstream.proxy.content import namespaced_tool_result
from jarvis.aggregator.downstream.proxy.input_rounds import (
    answers_itself,
    complete_for_legacy_caller,
    relayed_capabilities,
)
from jarvis.aggregator.downstream.proxy.list_notices import ListChangeNotices
from jarvis.aggregator.downstream.proxy.logs import ServerLogs
from jarvis.aggregator.downstream.proxy.subscriptions import Subscriptions
from jarvis.aggregator.downstream.proxy.targets import Targets
from jarvis.aggregator.downstream.proxy.task_notices import TaskNotices
from jarvis.aggregator.downstream.proxy.tasks import SurfaceTasks, TaskHandles, is_task
from jarvis.aggregator.downstream.proxy.transparent import Forwarding, server_params
from jarvis.aggregator.downstream.proxy.versions import CACHE_HINTS, for_caller
from jarvis.aggregator.downstream.proxy.watches import ResourceWatches
from jarvis.aggregator.downstream.transport.relay import Caller
from jarvis.aggregator.mcp_server import untraced
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.request import principal_of, text_result
from jarvis.common import tracing
from jarvis.common.errors import JarvisError
from jarvis.common.internal_plane import InternalPlane

log = logging.getLogger(__name__)

_SERVING: ContextVar[str | None] = ContextVar("jarvis_serving_target", default=None)


class _ListChangingServer(Server[Any]):
    """Advertises `listChanged` for tools, prompts and resources to 2025-era clients, truthfully: membership changes
    and the servers' own notices are passed on (`ProxySurface.remember`)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options
            or NotificationOptions(tools_changed=True, prompts_changed=True, resources_changed=True),
            experimental_capabilities,
            extensions,
        )


@dataclass(frozen=True)
class ProxiedCall:
    """A tools/call on a profile or share, as its request stated it: what the proxy needs of the request."""

    target: str  # the profile or share named by the path
    principal: Principal
    name: str
    arguments: dict[str, Any] | None
    params: dict[str, Any]  # as the caller sent them, `_meta` included: the server gets them, renamed
    protocol_version: str | None
    progress: ProgressFnT | None = None  # relays the server's progress to the caller, when it asked for it
    caller: Caller | None = None  # where an interactive server's requests during the call go
    session_id: str | None = None  # the caller's MCP session (its log level, logs.py)


class ProxySurface:
    """One kind of proxy surface (`targets`: profiles or shares) as an MCP server, and the parts that serve it."""

    def __init__(
        self,
        targets: Targets,
        calls: CallPipeline,
        version: str,
        task_handles: TaskHandles | None = None,
    ) -> None:
        self.targets = targets
        self.kind = targets.name
        self.host = targets.host
        self.calls = calls
        self.server = untraced(
            _ListChangingServer(
                f"jarvis-{self.kind}",
                version=version,
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                get_tool_input_schema=self.input_schema,
                cache_hints=CACHE_HINTS,
            )
        )
        self.watches = ResourceWatches(self.host)
        self.notices = ListChangeNotices(targets, self.watches)
        self.server_logs = ServerLogs(self.host)
        self.aggregate = Aggregate(targets, self.watches, self.server_logs, server_params)
        Forwarding(targets, self.aggregate, self.server_logs, self.notices).install(self.server)
        self.tasks = SurfaceTasks(targets, task_handles or TaskHandles.for_plane(InternalPlane()))
        self.tasks.install(self.server)
        subscriptions = Subscriptions(targets, self.aggregate, self.tasks, TaskNotices(self.host), self.watches)
        self.server.add_request_handler(
            "subscriptions/listen", types.SubscriptionsListenRequestParams, subscriptions.listen
        )

    async def close(self) -> None:
        """Wait for the notices and deliveries started from callbacks, once serving has ended."""
        for part in (self.notices, self.watches, self.server_logs):
            await part.close()

    # ------------------------------------------------------------ targets

    def exists(self, target: str) -> bool:
        return self.targets.exists(target)

    def servers_of(self, target: str) -> tuple[str, ...]:
        return self.targets.servers_of(target)

    def single_server(self, target: str) -> str | None:
        return self.targets.single_server(target)

    def tools(self, target: str, person: str = "") -> dict[str, ExposedTool]:
        return self.targets.tools(target, person)

    @contextlib.contextmanager
    def serving(self, target: str) -> Iterator[None]:
        """Mark `target` as the profile or share the current request is for (see `input_schema`)."""
        token = _SERVING.set(target)
        try:
            yield
        finally:
            _SERVING.reset(token)

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The input schema of tool `name` on the target being served, for the SDK's Mcp-Param-* header checks.

        Without it the SDK runs a whole tools/list of the profile for every 2026-07-28 tools/call.
        """
        target = _SERVING.get()
        exposed = self.tools(target).get(name) if target is not None and self.exists(target) else None
        schema = exposed.definition.get("inputSchema") if exposed is not None else None
        return schema if isinstance(schema, Mapping) else None

    # ------------------------------------------------------------ MCP handlers

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        target = self.targets.target_of(ctx)
        principal = principal_of(ctx)
        person = person_of(principal)
        # Servers still starting after `list_wait` reach the list when they are up (list_changed).
        await self.host.learn_tools(self.servers_of(target), self.host.options.list_wait, person)
        self.notices.remember(target, ctx)
        tools = []
        for exposed in self.tools(target, person).values():
            if not self.targets.may_call(principal, target, exposed):
                continue
            try:
                tools.append(types.Tool.model_validate(exposed.definition, by_name=False))
            except ValidationError as exc:
                # Normalisation fixes schemas; anything else odd costs this tool only, never the listing.
                log.warning(
                    "tool %s of downstream server %s left out of tools/list: invalid definition",
                    exposed.tool,
                    exposed.server,
                    extra={"server": exposed.server, "tool": exposed.tool, "error": str(exc)[:300]},
                )
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        session = ctx.session

        async def progress(value: float, total: float | None, message: str | None) -> None:
            await session.report_progress(value, total, message)

        raw = dict(ctx.params or {})
        meta = raw.get("_meta")
        # Progress is asked of the server only when the caller asked for it (it has a token).
        wanted = isinstance(meta, dict) and meta.get("progressToken") is not None
        call = ProxiedCall(
            target=self.targets.target_of(ctx),
            principal=principal_of(ctx),
            name=params.name,
            arguments=params.arguments,
            params=raw,
            protocol_version=ctx.protocol_version,
            progress=cast(ProgressFnT, progress) if wanted else None,
            caller=Caller(ctx.session, ctx.request_id) if ctx.request_id is not None else None,
            session_id=caller_session_id(ctx),
        )
        return await self.call_tool(call)

    async def call_tool(self, call: ProxiedCall) -> dict[str, Any] | types.CallToolResult:
        """A tools/call on `call.target`: the caller's result as a raw dict, in the caller's protocol version.

        The profile's door, whoever parsed the request (the SDK's handler or `direct_calls`): the name resolves to one
        of the target's servers' tools, and the call pipeline decides and records it (scopes, limits, quarantine, the
        person's consent) before `_forward` sends it."""
        target, person = call.target, person_of(call.principal)
        exposed = await self._resolve(target, call.name, person)
        if exposed is None and (down := self._not_serving(target, call.name)) is not None:
            return text_result(down, is_error=True)
        if exposed is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool '{call.name}' on {self.kind} '{target}'; call tools/list for its tools",
            )
        route = downstream_route(
            self.host,
            exposed.server,
            exposed.name,
            exposed.tool,
            person,
            lambda routed: self._forward(call, routed, exposed),
            lambda principal: self.targets.refusal(principal, target, exposed),
            exposed.definition.get("inputSchema"),
        )
        routed = ToolCall(
            call.principal,
            self.kind,
            call.name,
            dict(call.arguments or {}),
            params=call.params,
            gated=True,  # the gate took it (over stdio the caller is the local user, never limited)
            protocol_version=call.protocol_version,
            caller=call.caller,
            progress=call.progress,
        )
        started = time.perf_counter()
        result = await self.calls.run(routed, route)
        self.targets.called(target, not is_error(result), (time.perf_counter() - started) * 1000)
        return result

    async def _resolve(self, target: str, name: str, person: str) -> ExposedTool | None:
        """The tool `name` names on `target` for `person`: listed, withheld (the pipeline says why), answered by a
        transparent surface's one server, or a tool of a server each person connects to, not learned yet."""
        tools = self.tools(target, person)
        if name not in tools:
            # The one part of routing that takes time, so the one traced: a server never seen is started here, to
            # learn its tools. A name already known is a lookup of microseconds, worth no span.
            with tracing.span("route"):
                await self.host.learn_tools(self.servers_of(target), person=person)
            tools = self.tools(target, person)
        exposed = tools.get(name) or self._quarantined(target, name)
        if exposed is None and (single := self.single_server(target)) is not None:
            # A transparent surface lets the server answer names it did not list, as it would directly.
            exposed = ExposedTool(name, single, name, {})
        return exposed or self._personal_tool(target, name)

    def _personal_tool(self, target: str, name: str) -> ExposedTool | None:
        server, sep, tool = name.partition(NAMESPACE_SEPARATOR)
        if sep and server in self.servers_of(target) and self.host.personal.serves(server):
            return ExposedTool(name, server, tool, {})
        return None

    def _not_serving(self, target: str, name: str) -> str | None:
        """Why `name` is missing when the server it would come from is failing or cannot be hosted.

        A tool of a server that does not start is simply absent from tools/list; a caller asking for
        it must learn which server is failing, why, and what to do, not that the tool is unknown.
        """
        members = self.servers_of(target)
        server, sep, _ = name.partition(NAMESPACE_SEPARATOR)
        candidates = [server] if sep and server in members else list(members)
        reasons = []
        for member in candidates:
            host = self.host.hosts.get(member)
            if host is None:
                continue
            snapshot = host.snapshot()
            if snapshot.state == FAILING or (snapshot.last_error and snapshot.state != RUNNING):
                reasons.append(f"server '{member}' is failing: {snapshot.last_error or 'it did not start'}")
        if not reasons:
            return None
        return (
            f"'{name}' is not available on {self.kind} '{target}' because "
            + "; ".join(reasons)
            + f". Fix the cause, then jarvis_server action=info name={candidates[0]} shows its state "
            f"(jarvis_profile action=restart name={target} retries at once)"
        )

    async def _forward(self, call: ProxiedCall, routed: ToolCall, exposed: ExposedTool) -> dict[str, Any]:
        """The call sent to the server: renamed, with the caller's progress, log level and rounds relayed, a task
        handed out as a handle, and the result for the caller's protocol version (URIs namespaced on a mixed surface).
        `routed.params` are the caller's, less an answer to Jarvis's own consent round (the pipeline took it)."""
        result = await self._sent(call, routed, exposed)
        if self.single_server(call.target) is None:  # a mixed surface: URIs in the content say whose they are
            result = namespaced_tool_result(exposed.server, result)
        return for_caller(result, call.protocol_version)

    async def _sent(self, call: ProxiedCall, routed: ToolCall, exposed: ExposedTool) -> dict[str, Any]:
        request = dict(routed.params)
        request["name"] = exposed.tool
        # The caller's progress token is theirs; the dispatcher gives the downstream request its own.
        caller_meta = request.pop("_meta", None) or {}
        meta = {k: v for k, v in caller_meta.items() if k != "progressToken"}
        if not answers_itself(call.protocol_version):
            # Kept only where the request goes out in 2026-07-28 (envelope.py); a 2025 session never sees them.
            meta[types.CLIENT_CAPABILITIES_META_KEY] = relayed_capabilities(call.caller)
            level = self.server_logs.level_for(call.session_id, exposed.server)
            if level is not None and self.host.asks_in_rounds((exposed.server,)):  # else the session's lines carry it
                meta[types.LOG_LEVEL_META_KEY] = level
        tracing.inject(meta)  # where traced, the server is the child of Jarvis's span (SEP-414), not of the caller's
        if meta:
            request["_meta"] = meta
        schema = exposed.definition.get("inputSchema")
        caller, person = call.caller, person_of(call.principal)
        if caller is not None and self.single_server(call.target) is None:  # mixed: say whose log lines they are
            caller = dataclasses.replace(caller, server=exposed.server)

        async def send(params: dict[str, Any]) -> dict[str, Any]:
            return await self.host.call_tool(
                exposed.server,
                params,
                call.progress,
                caller,
                caller_version=call.protocol_version,
                input_schema=schema if isinstance(schema, dict) else None,
                person=person,
            )

        async def answered(answers: dict[str, Any], state: str | None) -> dict[str, Any]:
            retry = {**request, "inputResponses": answers}
            return await send(retry if state is None else {**retry, "requestState": state})

        result = await send(request)
        if is_task(result):  # a CreateTaskResult (SEP-2663): the caller gets a handle that routes back here
            return self.tasks.handed_out(call.target, call.principal, exposed.server, result)
        if not answers_itself(call.protocol_version):  # a 2025-era caller: Jarvis asks it and retries for it
            result = await complete_for_legacy_caller(result, exposed.server, caller, answered)
        # An input-required result (2026-07-28) is relayed as the server sent it, `requestState` untouched: the
        # caller retries with its answers, and the retry names the same tool, so it reaches the same server.
        shape = types.InputRequiredResult if is_input_required(result) else types.CallToolResult
        try:
            shape.model_validate(result, by_name=False)
        except ValidationError as exc:
            raise JarvisError(
                f"server '{exposed.server}' returned an invalid tool result "
                f"({exc.errors()[0]['msg'] if exc.errors() else exc})"
            ) from None
        return result

    def _quarantined(self, target: str, name: str) -> ExposedTool | None:
        """The quarantined tool of one of the target's servers that `name` names (not listed: the pipeline refuses
        it, saying why)."""
        prefixed = self.targets.prefixed(target)
        for server in self.servers_of(target):
            for tool in (self.host.tools_of(server) or ServedTools()).quarantined:
                if name == (namespaced(server, tool) if prefixed else tool):
                    return ExposedTool(name, server, tool, {})
        return None
