"""A reference downstream for the conformance tests: what the official conformance suite's server scenarios
require, built on the mcp SDK, so one server speaks both 2025-11-25 and 2026-07-28.

Run: `python tests/support/reference_server.py PORT [legacy|modern]` serves streamable HTTP at
http://127.0.0.1:PORT/mcp; with `legacy` it answers 2025-era requests only, as a server from before 2026-07-28 would;
with `modern` 2026-07-28 requests only (`initialize` is -32601, any other handshake-era request -32022); with
`resumable` 2025-era requests only, keeping every event, suggesting `retry: REFERENCE_RETRY_MS` (default 400), with a
`test_reconnection` tool whose stream is closed before its result (resumed with `Last-Event-ID`; REFERENCE_RECORD then
also gets when each stream was cut and each resuming GET, with the id it asked for).
For the aggregation tests, `REFERENCE_CACHE=TTL_MS:SCOPE` sets its caching hint and `REFERENCE_RECORD=FILE` appends
each request it receives to FILE (one JSON line: method, protocol version, and its name, uri, ref and requestState),
so a test can tell exactly what reached which server (with the log level a 2026-07-28 request's `_meta` asked for,
the `traceparent` of its HTTP headers and of its `_meta`, and any `cookie` header).
`REFERENCE_TASK_NOTICES=status` announces each task's status changes as the 2025-era `notifications/tasks/status`
on the standalone stream of the session that made the task, instead of as `notifications/tasks` on the
`subscriptions/listen` streams that asked for the task (SEP-2663, the default); `REFERENCE_SET_LEVEL=fail` makes it
refuse `logging/setLevel`.
The fixtures' names, texts and shapes are the ones `conformance server --help`/the scenarios' descriptions ask
for; what the SDK does itself (request-state sealing, `_meta` validation, header checks) is left to it, since
that is what a real downstream does. REFERENCE_EXPECTED_FAILURES in tests/e2e/test_downstream_conformance.py
lists the scenarios this server does not pass directly, with the reason.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import sys
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, cast

import uvicorn
from mcp.server.caching import CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, Extension, MCPServer, MethodBinding, require_client_extension
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp.server.session import ServerSession
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LOG_LEVEL_META_KEY,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    AudioContent,
    CallToolRequestParams,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    InputRequest,
    InputRequiredResult,
    JSONRPCMessage,
    ListRootsRequest,
    RequestParams,
    ResourceLink,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

# A 1x1 PNG and a minimal WAV, the suite only checks the shape of image/audio content.
IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
# Cacheable results carry freshness hints (SEP-2549); private so a proxy never shares them across tokens.
_TTL, _, _SCOPE = os.environ.get("REFERENCE_CACHE", "60000:private").partition(":")
HINT = CacheHint(ttl_ms=int(_TTL), scope="public" if _SCOPE == "public" else "private")
RECORD = os.environ.get("REFERENCE_RECORD")


async def _discover_only(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    """`modern` mode: a server that speaks 2026-07-28 only, as the specification allows: `initialize` is no method of
    it, and a request of the handshake era is refused with -32022 naming the versions it speaks."""
    if ctx.method == "initialize":
        raise MCPError(METHOD_NOT_FOUND, "Method not found: initialize")
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        supported = {"supported": sorted(MODERN_PROTOCOL_VERSIONS), "requested": ctx.protocol_version}
        raise MCPError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", supported)
    return await call_next(ctx)


async def _handshake_only(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    """`legacy` mode: a server from before 2026-07-28, which answers no 2026-era request (server/discover included)."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(INVALID_REQUEST, f"this server speaks {LATEST_HANDSHAKE_VERSION} only")
    return await call_next(ctx)


# --- the Tasks extension (SEP-2663) ---------------------------------------------------------------------------
# The SDK ships the extension seam (Extension, MethodBinding, a tools/call interceptor) but no Tasks extension, so
# this is one, kept in memory: a task-supporting tool called by a client that declares the extension on its request
# runs in the background and the call answers a CreateTaskResult; tasks/get, tasks/update and tasks/cancel follow it.
TASKS = "io.modelcontextprotocol/tasks"
TASK_TTL_MS = 600_000
POLL_INTERVAL_MS = 200
TERMINAL = frozenset({"completed", "failed", "cancelled"})


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Task:
    task_id: str
    created_at: str = field(default_factory=_now)
    last_updated_at: str = field(default_factory=_now)
    status: str = "working"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    work: asyncio.Task[None] | None = None
    maker: ServerSession | None = None  # the 2025-era session the task was made under: its notices go there

    def legacy_envelope(self) -> dict[str, Any]:
        """The task as the 2025-era `notifications/tasks/status` states it (ttl and pollInterval, no result)."""
        envelope = self.envelope()
        return {
            **{key: envelope[key] for key in ("taskId", "status", "createdAt", "lastUpdatedAt")},
            "ttl": TASK_TTL_MS,
            "pollInterval": POLL_INTERVAL_MS,
        }

    def move(self, status: str) -> None:
        if self.status not in TERMINAL:  # a terminal status is final (a cancel wins over a late result)
            self.status, self.last_updated_at = status, _now()
            notices.announce(self)

    def envelope(self) -> dict[str, Any]:
        return {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttlMs": TASK_TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }

    def detailed(self) -> dict[str, Any]:
        """The task as tasks/get states it: the result, error or outstanding requests its status carries."""
        extra: dict[str, Any] = {}
        if self.status == "completed":
            extra["result"] = self.result
        elif self.status == "failed":
            extra["error"] = self.error
        elif self.status == "input_required":
            extra["inputRequests"] = dict(self.input_requests)
        return {**self.envelope(), **extra}

    async def ask(self, requests: dict[str, InputRequest]) -> dict[str, Any]:
        """Park the task in `input_required` until tasks/update has answered every request; the answers by key."""
        self.input_requests = {
            key: request.model_dump(by_alias=True, exclude_none=True, mode="json") for key, request in requests.items()
        }
        self.answers = {}
        self.answered.clear()
        self.move("input_required")
        await self.answered.wait()
        self.move("working")
        return self.answers

    def answer(self, responses: dict[str, Any]) -> None:
        # Keys that are not outstanding (never issued, already answered) are ignored, as the spec says.
        for key in [key for key in responses if key in self.input_requests]:
            del self.input_requests[key]
            self.answers[key] = _plain(responses[key])
        if self.status == "input_required" and not self.input_requests:
            self.answered.set()


RUNNING_TASK: ContextVar[Task | None] = ContextVar("running_task", default=None)


@dataclass(frozen=True)
class TaskTool:
    required: bool  # taskSupport "required": a client without the extension gets -32021 instead of a sync result
    # False: this round is not the task yet (an input-required round before it, SEP-2663's MRTR composition).
    ready: Callable[[CallToolRequestParams], bool] = lambda params: True


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId")


class TaskUpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class TasksExtension(Extension):
    identifier = TASKS

    def __init__(self) -> None:
        self.task_tools: dict[str, TaskTool] = {}
        self._tasks: dict[str, Task] = {}

    @property
    def known(self) -> set[str]:
        return set(self._tasks)

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, self._get),
            MethodBinding("tasks/update", TaskUpdateParams, self._update),
            MethodBinding("tasks/cancel", TaskParams, self._cancel),
        ]

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        tool = self.task_tools.get(params.name)
        if tool is None:
            return await call_next(ctx)
        if not _declares_tasks(ctx):
            if tool.required:
                require_client_extension(ctx, TASKS)
            return await call_next(ctx)
        if not tool.ready(params):
            return await call_next(ctx)
        task = Task(task_id=secrets.token_urlsafe(18), maker=handshake_sessions.get(_session_id(ctx)))
        self._tasks[task.task_id] = task  # stored before the answer: an immediate tasks/get finds it
        task.work = asyncio.get_running_loop().create_task(_run(task, ctx, call_next))
        return {"resultType": "task", **task.envelope()}

    def _find(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Task:
        require_client_extension(ctx, TASKS)
        _check_task_header(ctx, params.task_id)
        task = self._tasks.get(params.task_id)
        if task is None:
            raise MCPError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
        return task

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        return self._find(ctx, params).detailed()

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: TaskUpdateParams) -> dict[str, Any]:
        self._find(ctx, params).answer(params.input_responses)
        return {}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        task = self._find(ctx, params)
        task.move("cancelled")
        if task.work is not None:
            task.work.cancel()
        return {}


async def _run(task: Task, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> None:
    """The tool's own handler, in the background: its result completes the task, a protocol error fails it."""
    RUNNING_TASK.set(task)
    try:
        result = await call_next(ctx)
    except asyncio.CancelledError:
        task.move("cancelled")
        return
    except MCPError as exc:
        task.error = exc.error.model_dump(by_alias=True, exclude_none=True, mode="json")
        task.move("failed")
        return
    except Exception as exc:  # a crash is a protocol-level failure, as it would be for the request itself
        task.error = {"code": INTERNAL_ERROR, "message": str(exc)}
        task.move("failed")
        return
    task.result = _plain(result)
    task.move("completed")


def _declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and TASKS in (capabilities.extensions or {})


def _check_task_header(ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """SEP-2663 extends SEP-2243's `Mcp-Name` to tasks/*: it must carry `taskId` (the SDK checks core methods only)."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return
    name = decode_header_value(headers.get(MCP_NAME_HEADER))
    if name is None or name.strip() != task_id:
        raise MCPError(HEADER_MISMATCH, f"{MCP_NAME_HEADER} header does not match params.taskId")


def running_task() -> Task:
    task = RUNNING_TASK.get()
    if task is None:
        raise MCPError(INTERNAL_ERROR, "this tool runs as a task only")
    return task


class _Notice(BaseModel):
    """A notification the SDK has no model for (an extension's), sent as the wire has it."""

    method: str
    params: dict[str, Any]


async def _send(ctx: ServerRequestContext[Any], method: str, params: dict[str, Any]) -> None:
    """`method` on the stream of the request `ctx` serves."""
    await ctx.session.send_notification(cast(Any, _Notice(method=method, params=params)), ctx.request_id)


class TaskNotices:
    """Task status notifications: `notifications/tasks` on the listen streams that asked for a task (SEP-2663), or,
    with REFERENCE_TASK_NOTICES=status, the 2025-era `notifications/tasks/status` on the maker's session."""

    def __init__(self, legacy: bool) -> None:
        self.legacy = legacy
        self._streams: dict[str, set[asyncio.Queue[dict[str, Any]]]] = {}

    def announce(self, task: Task) -> None:
        if self.legacy:
            if task.maker is not None:
                notice = _Notice(method="notifications/tasks/status", params=task.legacy_envelope())
                asyncio.get_running_loop().create_task(task.maker.send_notification(cast(Any, notice)))
            return
        for queue in self._streams.get(task.task_id, ()):
            queue.put_nowait(task.detailed())

    async def listen(self, ctx: ServerRequestContext[Any], params: SubscriptionsListenRequestParams) -> Any:
        """A listen stream whose filter names tasks: acknowledged with the tasks this server knows, then a
        `notifications/tasks` frame per status change of each (other kinds go to the SDK's own handler)."""
        wanted = (params.notifications.model_extra or {}).get("taskIds")
        if wanted is None:
            return await _sdk_listen(ctx, params)
        require_client_extension(ctx, TASKS)
        honored = [] if self.legacy else [task_id for task_id in wanted if task_id in tasks.known]
        meta = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        for task_id in honored:
            self._streams.setdefault(task_id, set()).add(queue)
        try:
            ack = {"notifications": {"taskIds": honored}, "_meta": meta}
            await _send(ctx, "notifications/subscriptions/acknowledged", ack)
            while True:
                await _send(ctx, "notifications/tasks", {**(await queue.get()), "_meta": meta})
        finally:
            for task_id in honored:
                self._streams.get(task_id, set()).discard(queue)


async def _remember_session(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    """A 2026-07-28 request that carries a session id was sent by that session's client: the 2025-era task status
    notification of a task it makes goes out on that session's standalone stream."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and _session_id(ctx):
        handshake_sessions[_session_id(ctx)] = ctx.session
    return await call_next(ctx)


handshake_sessions: dict[str, ServerSession] = {}
tasks = TasksExtension()
notices = TaskNotices(os.environ.get("REFERENCE_TASK_NOTICES") == "status")


async def _record(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    """With REFERENCE_RECORD: what reached this server, before anything (its requestState check) can refuse it."""
    params = dict(ctx.params or {})
    entry = {"method": ctx.method, "version": ctx.protocol_version}
    entry.update({key: params[key] for key in ("name", "uri", "ref", "requestState") if key in params})
    meta = params.get("_meta") or {}
    if meta.get(LOG_LEVEL_META_KEY) is not None:
        entry["logLevel"] = meta[LOG_LEVEL_META_KEY]
    # The trace context each way it can come (issue 50): a request's HTTP header and its `_meta` (SEP-414).
    headers = getattr(ctx.request, "headers", None) or {}
    header = headers.get("traceparent")
    # A cookie, if one ever reached it: a console session must not (issue 49).
    # And `X-Team-Key`, the header an admin sets for a remote server on the console's Servers page.
    traced = {
        "traceparentHeader": header,
        "traceparentMeta": meta.get("traceparent"),
        "cookie": headers.get("cookie"),
        "teamKey": headers.get("x-team-key"),
    }
    entry.update({key: value for key, value in traced.items() if value is not None})
    with open(str(RECORD), "a") as record:
        record.write(json.dumps(entry) + "\n")
    return await call_next(ctx)


LEGACY, MODERN, RESUMABLE = (sys.argv[2:] == [mode] for mode in ("legacy", "modern", "resumable"))
server = MCPServer(
    name="jarvis-reference-server",
    version="1.0.0",
    middleware=(
        [_handshake_only]
        if LEGACY or RESUMABLE
        else [_discover_only, _remember_session]
        if MODERN
        else [_remember_session]
    ),
    extensions=[] if LEGACY else [tasks],
    cache_hints={
        method: HINT
        for method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read")
    },
)
subscribers: dict[str, dict[str, Any]] = {}  # URI -> the sessions subscribed to it, by session id


# --- tools: content shapes -----------------------------------------------------------------------------------
@server.tool(description="Returns one text block")
def test_simple_text() -> str:
    return "This is a simple text response for testing."


@server.tool(description="Returns one image block")
def test_image_content() -> list[ImageContent]:
    return [ImageContent(type="image", data=IMAGE, mime_type="image/png")]


@server.tool(description="Returns one audio block")
def test_audio_content() -> list[AudioContent]:
    return [AudioContent(type="audio", data=AUDIO, mime_type="audio/wav")]


def _embedded(uri: str, text: str, mime: str = "text/plain") -> EmbeddedResource:
    return EmbeddedResource(type="resource", resource=TextResourceContents(uri=uri, mime_type=mime, text=text))


@server.tool(description="Returns an embedded resource")
def test_embedded_resource() -> list[EmbeddedResource]:
    return [_embedded("test://embedded-resource", "This is an embedded resource content.")]


@server.tool(description="Returns text, image and resource blocks")
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    return [
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=IMAGE, mime_type="image/png"),
        _embedded("test://mixed-content-resource", '{"test": "data", "value": 123}', "application/json"),
    ]


@server.tool(description="Links the static text resource and embeds the watched one")
def test_resource_links() -> list[ResourceLink | EmbeddedResource]:
    link = ResourceLink(type="resource_link", name="static-text", uri="test://static-text", mime_type="text/plain")
    return [link, _embedded("test://watched-resource", "Watched resource content")]


@server.tool(description="Always fails")
def test_error_handling() -> str:
    raise RuntimeError("This tool intentionally returns an error for testing")


# --- tools: notifications during a call ----------------------------------------------------------------------
@server.tool(description="Logs three info messages while it runs")
async def test_tool_with_logging(ctx: Context) -> str:
    for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.info(message)
        await asyncio.sleep(0.05)
    return "Tool with logging executed successfully"


@server.tool(description="Announces that its prompts and resources lists changed (on the caller's session)")
async def test_announce_list_changes(ctx: Context) -> str:
    await ctx.session.send_prompt_list_changed()
    await ctx.session.send_resource_list_changed()
    return "announced"


@server.tool(description="Names the HTTP client that sent this call (its User-Agent header)")
def test_user_agent(ctx: Context) -> str:
    return str((ctx.headers or {}).get("user-agent", ""))


@server.tool(description="Returns the JSON-RPC id this call came with")
def test_request_id(ctx: Context) -> str:
    return str(ctx.request_id)


@server.tool(description="Reports progress 0, 50 and 100 of 100")
async def test_tool_with_progress(ctx: Context) -> str:
    for step in (0, 50, 100):
        await ctx.report_progress(progress=step, total=100, message=f"Completed step {step} of 100")
        await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"


# --- tools: 2025-11-25 server-to-client requests -------------------------------------------------------------
@server.tool(description="Asks the client's LLM the given prompt")
async def test_sampling(prompt: str, ctx: Context) -> str:
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))], max_tokens=100
    )
    content = result.content
    return f"LLM response: {content.text if isinstance(content, TextContent) else 'No response'}"


class UserResponse(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


@server.tool(description="Asks the user the given message")
async def test_elicitation(message: str, ctx: Context) -> str:
    result = await ctx.elicit(message=message, schema=UserResponse)
    content = result.data.model_dump_json() if result.action == "accept" else "{}"
    return f"User response: action={result.action}, content={content}"


class Defaults(BaseModel):
    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: str = Field(
        default="active", description="User status", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    verified: bool = Field(default=True, description="Verification status")


@server.tool(description="Elicits a form whose fields all have defaults (SEP-1034)")
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    result = await ctx.elicit(message="Please provide user information", schema=Defaults)
    content = result.data.model_dump_json() if result.action == "accept" else "{}"
    return f"Elicitation completed: action={result.action}, content={content}"


class Enums(BaseModel):
    untitledSingle: str = Field(
        description="Simple enum without titles", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    titledSingle: str = Field(
        description="Enum with titled options (oneOf)",
        json_schema_extra={
            "oneOf": [
                {"const": "low", "title": "Low Priority"},
                {"const": "medium", "title": "Medium Priority"},
                {"const": "high", "title": "High Priority"},
            ]
        },
    )
    untitledMulti: list[str] = Field(
        description="Multi-select without titles",
        json_schema_extra={"items": {"type": "string", "enum": ["read", "write", "execute"]}},
    )
    titledMulti: list[str] = Field(
        description="Multi-select with titled options",
        json_schema_extra={
            "items": {
                "anyOf": [
                    {"const": "feature", "title": "New Feature"},
                    {"const": "bug", "title": "Bug Fix"},
                    {"const": "docs", "title": "Documentation"},
                ]
            }
        },
    )
    legacyEnum: str = Field(
        description="Legacy enum with enumNames",
        json_schema_extra={
            "enum": ["small", "medium", "large"],
            "enumNames": ["Small Size", "Medium Size", "Large Size"],
        },
    )


@server.tool(description="Elicits every enum schema variant (SEP-1330)")
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    result = await ctx.elicit(message="Please select values using different enum schema types", schema=Enums)
    content = result.data.model_dump_json() if result.action == "accept" else "{}"
    return f"Elicitation completed: action={result.action}, content={content}"


# --- tools: 2026-07-28 input-required results (SEP-2322) ------------------------------------------------------
def _ask(message: str, field: str, kind: str = "string") -> ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return ElicitRequest(
        method="elicitation/create", params=ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def _sample(text: str, max_tokens: int) -> CreateMessageRequest:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    return CreateMessageRequest(
        method="sampling/createMessage", params=CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    )


ROOTS = ListRootsRequest(method="roots/list")


def _answers(ctx: Context, *keys: str) -> dict[str, Any] | None:
    """The client's responses when all of `keys` are there (extra keys are ignored), else None."""
    responses = ctx.input_responses or {}
    if not all(key in responses for key in keys):
        return None
    return {key: _plain(responses[key]) for key in keys}


def _plain(value: Any) -> Any:
    return value.model_dump(by_alias=True, exclude_none=True) if isinstance(value, BaseModel) else value


def _needs(requests: dict[str, InputRequest], state: str | None = None) -> InputRequiredResult:
    return InputRequiredResult(input_requests=requests, request_state=state)


def _form(answer: dict[str, Any], field: str) -> str:
    return str((answer.get("content") or {}).get(field, ""))


def _one_question(ctx: Context, key: str, question: str, field: str, reply: str) -> str | InputRequiredResult:
    """Ask `question` (one form field) through an input-required result; then `reply` with the answer."""
    answers = _answers(ctx, key)
    if answers is None:
        return _needs({key: _ask(question, field)})
    return reply.format(_form(answers[key], field))


@server.tool(description="Asks the user's name through an input-required result")
def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
    answers = _answers(ctx, "user_name")
    if answers is None or not isinstance(answers["user_name"], dict):
        return _needs({"user_name": _ask("What is your name?", "name")})
    return f"Hello, {_form(answers['user_name'], 'name')}!"


@server.tool(description="Samples the client's LLM through an input-required result")
def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
    answers = _answers(ctx, "capital_question")
    if answers is None:
        return _needs({"capital_question": _sample("What is the capital of France?", 100)})
    content = answers["capital_question"].get("content") or {}
    return f"LLM response: {content.get('text', '') if isinstance(content, dict) else ''}"


@server.tool(description="Lists the client's roots through an input-required result")
def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
    answers = _answers(ctx, "client_roots")
    if answers is None:
        return _needs({"client_roots": ROOTS})
    roots = [root.get("uri", "") for root in answers["client_roots"].get("roots", [])]
    return f"Client roots: {', '.join(roots)}"


@server.tool(description="Round-trips a requestState")
def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
    answers = _answers(ctx, "confirm")
    if answers is None or ctx.request_state != "confirm-pending":
        return _needs({"confirm": _ask("Please confirm", "ok", "boolean")}, "confirm-pending")
    return "state-ok: confirmed"


@server.tool(description="Asks for elicitation, sampling and roots at once")
def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
    answers = _answers(ctx, "user_name", "greeting", "client_roots")
    if answers is None or ctx.request_state != "all-pending":
        return _needs(
            {
                "user_name": _ask("What is your name?", "name"),
                "greeting": _sample("Generate a greeting", 50),
                "client_roots": ROOTS,
            },
            "all-pending",
        )
    return f"All inputs received for {_form(answers['user_name'], 'name')}"


@server.tool(description="Two rounds of questions with an evolving requestState")
def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
    state = ctx.request_state
    if state and state.startswith("round-2:") and (answers := _answers(ctx, "step2")) is not None:
        return f"Done: {state.removeprefix('round-2:')} likes {_form(answers['step2'], 'color')}"
    if state == "round-1" and (answers := _answers(ctx, "step1")) is not None:
        return _needs(
            {"step2": _ask("Step 2: What is your favorite color?", "color")},
            f"round-2:{_form(answers['step1'], 'name')}",
        )
    return _needs({"step1": _ask("Step 1: What is your name?", "name")}, "round-1")


@server.tool(description="Issues a requestState the SDK seals; a tampered echo is rejected")
def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
    if ctx.request_state == "sealed" and _answers(ctx, "confirm") is not None:
        return "state-ok"
    return _needs({"confirm": _ask("Please confirm", "ok", "boolean")}, "sealed")


@server.tool(description="Only asks for what the client declared it supports")
def test_input_required_result_capabilities(ctx: Context) -> str | InputRequiredResult:
    capabilities = ctx.client_capabilities
    requests: dict[str, InputRequest] = {}
    if capabilities is not None and capabilities.sampling is not None:
        requests["greeting"] = _sample("Generate a greeting", 50)
    if capabilities is not None and capabilities.elicitation is not None:
        requests["user_name"] = _ask("What is your name?", "name")
    if not requests or _answers(ctx, *requests) is not None:
        return "Capabilities respected"
    return _needs(requests)


def _greeting_sample() -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="Say hello"))], max_tokens=20)


@server.tool(description="Needs sampling: a client that did not declare it gets -32021 (SEP-2575)")
def test_missing_capability(sampled: Annotated[CreateMessageResult, Resolve(_greeting_sample)]) -> str:
    content = sampled.content
    return f"Sampled: {content.text if isinstance(content, TextContent) else ''}"


@server.tool(description="Carries its region argument as the Mcp-Param-Region header (SEP-2243)")
def test_custom_header(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    query: str = "",  # noqa: PT028 - a served tool, not a pytest test
) -> str:
    return f"region={region} query={query}"


# --- tools: the Tasks extension's fixtures (SEP-2663) ---------------------------------------------------------
@server.tool(description="Sync only: greets the given name")
def greet(name: str) -> str:
    return f"Hello, {name}!"


@server.tool(description="Task-supporting: sleeps the given seconds, then answers")
async def slow_compute(seconds: float = 1, label: str = "") -> str:
    await asyncio.sleep(seconds)
    return f"Computed {label or 'result'} after {seconds:g}s"


@server.tool(description="Task required: reports a tool execution error after about a second")
async def failing_job() -> str:
    await asyncio.sleep(1)
    raise RuntimeError("This job intentionally fails")


@server.tool(description="Task-supporting: fails with a protocol-level (JSON-RPC) error")
async def protocol_error_job() -> str:
    await asyncio.sleep(0.2)
    raise MCPError(INTERNAL_ERROR, "This job intentionally fails at the protocol level")


def _confirmed(answer: Any) -> bool:
    content = answer.get("content") if isinstance(answer, dict) else None
    return isinstance(content, dict) and answer.get("action") == "accept" and bool(content.get("confirm", True))


@server.tool(description="Task required: asks for a confirmation through the task's inputRequests")
async def confirm_delete(filename: str) -> str:
    answers = await running_task().ask({"confirm": _ask(f"Delete {filename}?", "confirm", "boolean")})
    return f"{'Deleted' if _confirmed(answers['confirm']) else 'Kept'} {filename}"


@server.tool(description="Task required: asks two questions at once through the task's inputRequests")
async def multi_input() -> str:
    answers = await running_task().ask({"first": _ask("First name?", "name"), "second": _ask("Second name?", "name")})
    return f"Received {_form(answers['first'], 'name')} and {_form(answers['second'], 'name')}"


@server.tool(description="Task required: asks the user's name (input-required round), then runs as a task")
def test_tool_with_task(ctx: Context) -> str | InputRequiredResult:
    return _one_question(ctx, "user_name", "What is your name?", "name", "Hello, {}, from a task!")


def _has_user_name(params: CallToolRequestParams) -> bool:
    return "user_name" in (params.input_responses or {})


tasks.task_tools.update(
    {
        "slow_compute": TaskTool(required=False),
        "failing_job": TaskTool(required=True),
        "protocol_error_job": TaskTool(required=True),
        "confirm_delete": TaskTool(required=True),
        "multi_input": TaskTool(required=True),
        "test_tool_with_task": TaskTool(required=True, ready=_has_user_name),
    }
)


# --- resources ------------------------------------------------------------------------------------------------
@server.resource("test://static-text", description="A static text resource", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", description="A static binary resource", mime_type="image/png")
def static_binary() -> bytes:
    return base64.b64decode(IMAGE)


@server.resource("test://template/{id}/data", description="A resource template", mime_type="application/json")
def template(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", description="A resource to subscribe to", mime_type="text/plain")
def watched() -> str:
    return "Watched resource content"


# --- prompts --------------------------------------------------------------------------------------------------
@server.prompt(description="A prompt without arguments")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@server.prompt(description="A prompt with two required arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(description="A prompt embedding a resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": _embedded(resourceUri, "Embedded resource content for testing.")},
        {"role": "user", "content": TextContent(type="text", text="Please process the embedded resource above.")},
    ]


@server.prompt(description="A prompt with an image")
def test_prompt_with_image() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": ImageContent(type="image", data=IMAGE, mime_type="image/png")},
        {"role": "user", "content": TextContent(type="text", text="Please analyze the image above.")},
    ]


@server.prompt(description="A prompt that asks the user for context first")
def test_input_required_result_prompt(ctx: Context) -> str | InputRequiredResult:
    return _one_question(ctx, "user_context", "What context should the prompt use?", "context", "Use this context: {}")


async def _complete(ctx: ServerRequestContext[Any], params: CompleteRequestParams) -> CompleteResult:
    values = [value for value in ("paris", "park", "party") if value.startswith(params.argument.value)]
    return CompleteResult(completion=Completion(values=values, total=len(values), has_more=False))


# --- 2025-11-25 session features: log level, subscriptions ------------------------------------------------------
async def _set_level(ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
    if os.environ.get("REFERENCE_SET_LEVEL") == "fail":
        raise MCPError(INTERNAL_ERROR, "this server refuses logging/setLevel")
    return EmptyResult()


def _session_id(ctx: ServerRequestContext[Any]) -> str:
    return str(getattr(ctx.request, "headers", {}).get("mcp-session-id", ""))


async def _subscribe(ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
    subscribers.setdefault(str(params.uri), {})[_session_id(ctx)] = ctx.session
    return EmptyResult()


async def _unsubscribe(ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams) -> EmptyResult:
    subscribers.get(str(params.uri), {}).pop(_session_id(ctx), None)
    return EmptyResult()


@server.tool(description="Tells the sessions subscribed to a resource that it changed")
async def test_touch_resource(uri: str) -> str:
    notified = 0
    for session_id, session in list(subscribers.get(uri, {}).items()):
        try:
            await session.send_resource_updated(uri)
            notified += 1
        except Exception:  # that session is gone: it subscribes no more
            subscribers[uri].pop(session_id, None)
    return f"notified {notified} subscriber(s) of {uri}"


_lowlevel: Annotated[Any, "the SDK exposes no public hook for these 2025-era handlers"] = server._lowlevel_server
# MCPServer.completion() is an untyped decorator, so completions go through the low-level registry too.
_lowlevel.add_request_handler("completion/complete", CompleteRequestParams, _complete)
_lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)
_lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, _subscribe)
_lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, _unsubscribe)
_sdk_listen = _lowlevel.get_request_handler("subscriptions/listen").handler
_lowlevel.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, notices.listen)
if RECORD:
    _lowlevel.middleware.insert(0, _record)  # outermost: it sees what the SDK's own checks then refuse


class MemoryEvents(EventStore):
    """`resumable` mode: every event of every stream, so a client that comes back with `Last-Event-ID` gets the rest of
    its stream (the SDK's transport asks this store; a real server would keep them in Redis or the like)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, JSONRPCMessage | None]] = []  # (event id, stream id, message)

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = f"{stream_id}:{len(self.events)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        index = next((i for i, (event_id, _, _) in enumerate(self.events) if event_id == last_event_id), None)
        if index is None:
            return None
        stream = self.events[index][1]
        for event_id, stream_id, message in self.events[index + 1 :]:
            if stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


async def test_reconnection(ctx: Context) -> str:
    """`resumable` mode (the conformance suite's `server-sse-polling` tool, SEP-1699): the call's SSE stream is closed
    after its priming event, before the result, which the client gets by reconnecting with `Last-Event-ID`."""
    _note_resumption({"cut_at": time.time()})
    await ctx.close_sse_stream()
    await asyncio.sleep(0.05)
    return "Reconnection test completed successfully"


def _note_resumption(entry: dict[str, Any]) -> None:
    if RECORD:
        with open(str(RECORD), "a") as record:
            record.write(json.dumps({"method": "sse", **entry}) + "\n")


def _recording_reconnections(app: ASGIApp) -> ASGIApp:
    """`resumable` mode with REFERENCE_RECORD: each GET that resumes a stream, with its `Last-Event-ID` and when."""

    async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            last = dict(scope["headers"]).get(b"last-event-id")
            if last is not None:
                _note_resumption({"last_event_id": last.decode(), "at": time.time()})
        await app(scope, receive, send)

    return recorded


if RESUMABLE:
    server.tool(description="Closes its SSE stream before its result (resumed with Last-Event-ID)")(test_reconnection)


def main() -> None:
    if sys.argv[1] == "stdio":  # a server Jarvis spawns: one stream, its era fixed by the handshake
        server.run("stdio")
        return
    port = int(sys.argv[1])
    # DNS-rebinding protection: only loopback Host/Origin values are served.
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"127.0.0.1:{port}", f"localhost:{port}"],
        allowed_origins=[f"http://127.0.0.1:{port}", f"http://localhost:{port}"],
    )
    # `resumable`: events kept, and a retry the client is to wait before reconnecting.
    app: ASGIApp = server.streamable_http_app(
        transport_security=security,
        host="127.0.0.1",
        event_store=MemoryEvents() if RESUMABLE else None,
        retry_interval=int(os.environ.get("REFERENCE_RETRY_MS", "400")) if RESUMABLE else None,
    )
    if RESUMABLE:
        app = _recording_reconnections(app)
    # h11, as the SDK's own `run` gets without httptools installed: uvicorn's httptools parser keeps the
    # whitespace around header values, which the SDK then compares as is (`sep-2243` whitespace checks).
    # Jarvis trims it at its gate; this server is the baseline the suite's results are compared with.
    uvicorn.run(app, host="127.0.0.1", port=port, http="h11", log_level="warning")


if __name__ == "__main__":
    main()
