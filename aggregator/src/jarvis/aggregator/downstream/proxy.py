"""Profile and share surfaces: MCP servers whose tools are downstream servers' tools, proxied.

`/mcp/profile/<name>` serves exactly the tools of the profile's servers (`<server>__<tool>`, or
the tools' own names for an unprefixed one-server profile), and their resources, prompts and
completions (transparent.py, aggregate.py); `/share/<server>/mcp` serves one server under its own
names. One low-level MCP server per kind serves every name: the name comes from the request path,
so a new profile needs no restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

import mcp_types as types
from mcp.server import NotificationOptions, Server
from mcp.server.context import ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.methods import is_input_required
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from jarvis.aggregator import audit
from jarvis.aggregator.downstream import transparent
from jarvis.aggregator.downstream.aggregate import Aggregate
from jarvis.aggregator.downstream.content import namespaced_tool_result
from jarvis.aggregator.downstream.host import DownstreamHost, ExposedTool
from jarvis.aggregator.downstream.lists import PROMPTS, RESOURCES, TOOLS, Lists
from jarvis.aggregator.downstream.logs import ServerLogs
from jarvis.aggregator.downstream.naming import SEPARATOR as NAMESPACE_SEPARATOR
from jarvis.aggregator.downstream.naming import namespaced
from jarvis.aggregator.downstream.relay import Caller
from jarvis.aggregator.downstream.shares import Shares
from jarvis.aggregator.downstream.supervisor import FAILING, RUNNING
from jarvis.aggregator.downstream.task_notices import TaskNotices
from jarvis.aggregator.downstream.tasks import SurfaceTasks, TaskHandles, is_task
from jarvis.aggregator.downstream.tools import ServedTools, quarantine_message
from jarvis.aggregator.downstream.versions import CACHE_HINTS, for_caller
from jarvis.aggregator.downstream.watches import ResourceWatches
from jarvis.aggregator.mcp_server import untraced
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.request import principal_of, text_result
from jarvis.aggregator.usage import UsageRecorder
from jarvis.common.errors import JarvisError
from jarvis.common.internal_plane import InternalPlane

log = logging.getLogger(__name__)

PROFILE, SHARE = "profile", "share"
SERVERS = "servers"  # the scope surface that grants a downstream server's tools wherever they are served
_MAX_SESSIONS = 10_000
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


class ProxySurface:
    def __init__(
        self,
        kind: str,
        host: DownstreamHost,
        shares: Shares,
        usage: UsageRecorder,
        metrics: AggregatorMetrics,
        version: str,
        task_handles: TaskHandles | None = None,
    ) -> None:
        self.kind = kind
        self.host = host
        self.shares = shares
        self.usage = usage
        self.metrics = metrics
        # Sessions that listed tools, prompts or resources, by target: they are the ones a list_changed tells something.
        self._sessions: dict[str, OrderedDict[str, ServerSession]] = {}
        # `jarvis mcp --surface profile/NAME` serves one target over stdio, where no path names it.
        self.stdio_target: str | None = None
        self.server = untraced(
            _ListChangingServer(
                f"jarvis-{kind}",
                version=version,
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                get_tool_input_schema=self.input_schema,
                cache_hints=CACHE_HINTS,
            )
        )
        host.subscribe(self._changed)
        self.watches = ResourceWatches(host)
        self.task_notices = TaskNotices(host)
        self.server_logs = ServerLogs(host)
        self.aggregate = Aggregate(self, transparent.server_params)
        transparent.install(self)
        self.tasks = SurfaceTasks(self, task_handles or TaskHandles.for_plane(InternalPlane()))
        self.server.add_request_handler(
            "subscriptions/listen", types.SubscriptionsListenRequestParams, self.aggregate.listen
        )

    # ------------------------------------------------------------ targets and permissions

    def servers_of(self, target: str) -> tuple[str, ...]:
        return self.host.profiles.get(target, ()) if self.kind == PROFILE else (target,)

    def exists(self, target: str) -> bool:
        return target in (self.host.profiles if self.kind == PROFILE else self.host.hosts)

    def single_server(self, target: str) -> str | None:
        """The one server this surface stands for (a share, an unprefixed profile), else None."""
        if self.kind == SHARE:
            return target
        members = self.host.profiles.get(target, ())
        return members[0] if len(members) == 1 and not self.host.prefixed(target) else None

    def tools(self, target: str) -> dict[str, ExposedTool]:
        prefixed = self.host.prefixed(target) if self.kind == PROFILE else False
        return self.host.exposed(self.servers_of(target), prefixed)

    def may_call(self, principal: Principal, target: str, exposed: ExposedTool) -> bool:
        """`profile[:<name>[:<tool>]]` on a profile, `share:<server>` on a share; on a profile, a grant of the
        server itself (`servers[:<server>[:<tool>]]`, as discovery's `tool_call` uses) counts too.

        Downstream annotations are the server's own claims (MCP says clients must not trust them), so
        `read` scopes never cover downstream tools.
        """
        if principal.may(self.kind, target, exposed.name, read_only=False, admin=False):
            return True
        return self.kind == PROFILE and principal.may(
            SERVERS, exposed.server, exposed.tool.lower(), read_only=False, admin=False
        )

    def servers_granted(self, principal: Principal, target: str) -> tuple[str, ...]:
        """The servers of `target` whose resources, prompts and completions `principal` may use: all of them with a
        grant of the whole surface (`profile[:<name>]`), else those granted whole (`servers[:<server>]`). A grant
        of single tools covers those tools only."""
        servers = self.servers_of(target)
        if principal.may(self.kind, target, None, read_only=False, admin=False):
            return servers
        if self.kind != PROFILE:
            return ()
        return tuple(s for s in servers if principal.may(SERVERS, s, None, read_only=False, admin=False))

    def granting(self, target: str, exposed: ExposedTool) -> list[str]:
        """The scopes `may_call` accepts for this tool, narrowest first, for a refusal to name."""
        names = [f"{self.kind}:{target}:{exposed.name}", f"{self.kind}:{target}", self.kind]
        if self.kind == PROFILE:
            names += [f"{SERVERS}:{exposed.server}:{exposed.tool.lower()}", f"{SERVERS}:{exposed.server}", SERVERS]
        return [*names, "admin"]

    def reaches(self, principal: Principal) -> bool:
        return principal.may_use_surface(self.kind) or (self.kind == PROFILE and principal.may_use_surface(SERVERS))

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

    def target_of(self, ctx: ServerRequestContext[Any]) -> str:
        request = ctx.request
        name = getattr(request, "path_params", {}).get("name") if request is not None else self.stdio_target
        if not isinstance(name, str) or not self.exists(name):
            raise MCPError(types.INVALID_PARAMS, f"no {self.kind} named {name!r} on this aggregator")
        return name

    # ------------------------------------------------------------ MCP handlers

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        target = self.target_of(ctx)
        await self.host.learn_tools(self.servers_of(target))
        principal = principal_of(ctx)
        self.remember(target, ctx)
        tools = []
        for exposed in self.tools(target).values():
            if not self.may_call(principal, target, exposed):
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
            target=self.target_of(ctx),
            principal=principal_of(ctx),
            name=params.name,
            arguments=params.arguments,
            params=raw,
            protocol_version=ctx.protocol_version,
            progress=cast(ProgressFnT, progress) if wanted else None,
            caller=Caller(ctx.session, ctx.request_id) if ctx.request_id is not None else None,
        )
        return await self.call_tool(call)

    async def call_tool(self, call: ProxiedCall) -> dict[str, Any] | types.CallToolResult:
        """A tools/call on `call.target`: the caller's result as a raw dict, in the caller's protocol version.

        Everything a proxied call is, whoever parsed the request (the SDK's handler or `direct_calls`): the
        tool's lookup, the caller's scopes, the server's call, usage, audit and metrics."""
        target = call.target
        tools = self.tools(target)
        if call.name not in tools:
            await self.host.learn_tools(self.servers_of(target))
            tools = self.tools(target)
        exposed = tools.get(call.name)
        if exposed is None and (withheld := self._quarantined(target, call.name)) is not None:
            return text_result(withheld, is_error=True)
        if exposed is None and (single := self.single_server(target)) is not None:
            # A transparent surface lets the server answer names it did not list, as it would directly.
            exposed = ExposedTool(call.name, single, call.name, {})
        if exposed is None and (down := self._not_serving(target, call.name)) is not None:
            return text_result(down, is_error=True)
        if exposed is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool '{call.name}' on {self.kind} '{target}'; call tools/list for its tools",
            )
        principal = call.principal
        if not self.may_call(principal, target, exposed):
            return text_result(
                f"your token's scopes do not allow {exposed.name} on {self.kind} '{target}'; a "
                f"token with one of these scopes may: {', '.join(self.granting(target, exposed))}",
                is_error=True,
            )
        started, outcome = time.perf_counter(), "ok"
        try:
            result = await self._forward(call, exposed)
            if self.single_server(target) is None:  # a mixed surface: URIs in the content say whose they are
                result = namespaced_tool_result(exposed.server, result)
            result = for_caller(result, call.protocol_version)
            outcome = "error" if result.get("isError") else "ok"
            return result
        except MCPError:
            outcome = "error"
            raise
        except JarvisError as exc:
            outcome = "error"
            return text_result(str(exc), is_error=True)
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.downstream_call(self.kind, self.host.server_label(exposed.server), outcome, elapsed)
            self.usage.record(
                exposed.name,
                "",
                outcome == "ok",
                elapsed * 1000,
                audit.fields(
                    principal,
                    self.kind,
                    call.arguments,
                    exposed.definition.get("inputSchema"),
                    outcome,
                    exposed.server,
                ),
            )
            if self.kind == SHARE:
                self.shares.count_call(target, outcome == "ok", elapsed * 1000)

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

    async def _forward(self, call: ProxiedCall, exposed: ExposedTool) -> dict[str, Any]:
        request = dict(call.params)
        request["name"] = exposed.tool
        # The caller's progress token is theirs; the dispatcher gives the downstream request its own.
        caller_meta = request.pop("_meta", None) or {}
        meta = {k: v for k, v in caller_meta.items() if k != "progressToken"}
        if meta:
            request["_meta"] = meta
        schema = exposed.definition.get("inputSchema")
        caller = call.caller
        if caller is not None and self.single_server(call.target) is None:  # mixed: say whose log lines they are
            caller = dataclasses.replace(caller, server=exposed.server)
        result = await self.host.call_tool(
            exposed.server,
            request,
            call.progress,
            caller,
            caller_version=call.protocol_version,
            input_schema=schema if isinstance(schema, dict) else None,
        )
        if is_task(result):  # a CreateTaskResult (SEP-2663): the caller gets a handle that routes back here
            return self.tasks.handed_out(call.target, call.principal, exposed.server, result)
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

    def _quarantined(self, target: str, name: str) -> str | None:
        """Why `name` is not served, when it is a quarantined tool of one of the target's servers."""
        prefixed = self.host.prefixed(target) if self.kind == PROFILE else False
        for server in self.servers_of(target):
            for tool in (self.host.tools_of(server) or ServedTools()).quarantined:
                if name == (namespaced(server, tool) if prefixed else tool):
                    return quarantine_message(server, tool)
        return None

    # ------------------------------------------------------------ list_changed

    def remember(self, target: str, ctx: ServerRequestContext[Any]) -> None:
        """Keep the 2025-era session of a listing request, to tell it when the target's lists change."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS or ctx.request is None:
            return  # 2026-era clients must not see tools/list vary per connection; they get no notification
        session_id = getattr(ctx.request, "headers", {}).get("mcp-session-id")
        if not session_id:
            return
        sessions = self._sessions.setdefault(target, OrderedDict())
        sessions[session_id] = ctx.session
        sessions.move_to_end(session_id)
        while len(sessions) > _MAX_SESSIONS:
            sessions.popitem(last=False)

    def _changed(self, profiles: set[str], servers: set[str], lists: Lists) -> None:
        self.watches.lists_changed(profiles if self.kind == PROFILE else servers, lists)
        for target in profiles if self.kind == PROFILE else servers:
            for session_id, session in list(self._sessions.get(target, {}).items()):
                asyncio.get_running_loop().create_task(self._tell(target, session_id, session, lists))

    async def _tell(self, target: str, session_id: str, session: ServerSession, lists: Lists) -> None:
        try:
            if TOOLS in lists:
                await session.send_tool_list_changed()
            if PROMPTS in lists:
                await session.send_prompt_list_changed()
            if RESOURCES in lists:
                await session.send_resource_list_changed()
        except Exception:  # the session is gone (closed, expired): forget it
            self._sessions.get(target, OrderedDict()).pop(session_id, None)
