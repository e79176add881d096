"""Tool calls answered directly give the SDK's own answer, byte for byte; anything the SDK would refuse, or keep
state for, still goes to the SDK.

Each request is sent twice over ASGI: to the SDK's streamable HTTP app alone, and to `DirectToolCalls` in front
of a second SDK app that records whether it was asked. A gate stand-in puts the parsed body and the caller in
the scope, as the real gate does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jarvis.aggregator.calls.pipeline import CallPipeline, default_steps
from jarvis.aggregator.calls.record import CallRecorder
from jarvis.aggregator.direct_calls import DirectToolCalls, SurfaceCalls
from jarvis.aggregator.jsonrpc import json_rpc_messages
from jarvis.aggregator.mcp_server import Binding, build_mcp_server
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN
from jarvis.aggregator.tooling.request import BODY_SCOPE_KEY, MESSAGES_SCOPE_KEY, PRINCIPAL_SCOPE_KEY
from jarvis.aggregator.tooling.tool import Surface, Tool
from jarvis.aggregator.usage import UsageRecorder
from jarvis.common.errors import InvalidArgument

MODERN, LEGACY = "2026-07-28", "2025-11-25"
pytestmark = pytest.mark.anyio


async def say(args: Any, _principal: Any) -> Any:
    return args["text"]  # a plain string is the result's text as it is


async def echo(args: Any, _principal: Any) -> Any:
    if args.get("fail"):
        raise InvalidArgument("asked to fail")
    return {"echo": args}


SURFACE = Surface(
    name="test",
    path="/mcp/test",
    tools=[
        Tool(
            name="echo",
            description="Echo the arguments",
            properties={"text": {"type": "string"}, "fail": {"type": "boolean"}},
            handler=echo,
        ),
        Tool(name="say", description="Say the text", properties={"text": {"type": "string"}}, handler=say),
        Tool(
            name="regional",
            description="Echo, with the region routed by a header",
            properties={"region": {"type": "string", "x-mcp-header": "Region"}},
            handler=echo,
        ),
    ],
)


@dataclass
class Answer:
    status: int
    content_type: str
    body: Any
    raw: bytes  # as sent: the same JSON must also be written the same way (escapes, separators)


class RecordingApp:
    def __init__(self, app: ASGIApp) -> None:
        self.app, self.asked = app, 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.asked += 1
        await self.app(scope, receive, send)


Headers = dict[str, str] | list[tuple[str, str]]  # a list can repeat a header


async def ask(app: ASGIApp, body: dict[str, Any] | list[Any], headers: Headers) -> Answer:
    """One POST through a stand-in of the gate (parsed body and caller in the scope) to `app`."""
    raw = json.dumps(body).encode()
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": SURFACE.path,
        "raw_path": SURFACE.path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (k.lower().encode(), v.encode()) for k, v in (headers.items() if isinstance(headers, dict) else headers)
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        MESSAGES_SCOPE_KEY: json_rpc_messages(raw),
        BODY_SCOPE_KEY: raw,
        PRINCIPAL_SCOPE_KEY: LOCAL_ADMIN,
    }
    sent: list[Message] = []
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    content_type = dict(start["headers"]).get(b"content-type", b"").decode()
    answer = json.loads(content) if content_type == "application/json" else content.decode()
    return Answer(start["status"], content_type, answer, content)


@dataclass
class Apps:
    sdk: ASGIApp
    direct: DirectToolCalls
    behind: RecordingApp


@pytest.fixture(params=[True, False], ids=["stateless", "sessions"])
async def apps(request: pytest.FixtureRequest) -> AsyncIterator[Apps]:
    metrics = AggregatorMetrics(CollectorRegistry())
    calls = CallPipeline(CallRecorder(UsageRecorder(None), metrics), default_steps(None))  # type: ignore[arg-type]
    binding = Binding({}, calls, metrics, "1.0")
    server = build_mcp_server(SURFACE, binding)
    managers = [
        StreamableHTTPSessionManager(
            app=server,
            stateless=request.param,
            json_response=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        for _ in range(2)
    ]
    async with managers[0].run(), managers[1].run():
        behind = RecordingApp(StreamableHTTPASGIApp(managers[1]))
        yield Apps(
            StreamableHTTPASGIApp(managers[0]),
            DirectToolCalls(
                behind,
                server,
                SurfaceCalls(SURFACE, binding),
                metrics.direct_tool_calls.labels(SURFACE.name),
                stateless=request.param,
                json=True,
            ),
            behind,
        )


def call(name: str, arguments: Any, version: str = MODERN, request_id: int | str = 7) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if version == MODERN:
        params["_meta"] = {
            PROTOCOL_VERSION_META_KEY: MODERN,
            CLIENT_CAPABILITIES_META_KEY: {},
            CLIENT_INFO_META_KEY: {"name": "test", "version": "1"},
        }
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def headers(version: str = MODERN, name: str = "echo", **extra: str) -> dict[str, str]:
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if version == MODERN:
        base |= {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name}
    else:
        base["mcp-protocol-version"] = version
    return base | extra


async def compare(apps: Apps, body: dict[str, Any], sent_headers: Headers) -> tuple[Answer, bool]:
    """Both answers, asserted equal, and whether the direct path answered (the SDK behind it was not asked)."""
    expected = await ask(apps.sdk, body, sent_headers)
    asked = apps.behind.asked
    got = await ask(apps.direct, body, sent_headers)
    assert got == expected
    return got, apps.behind.asked == asked


async def test_a_2026_call_is_answered_directly_with_the_sdks_answer(apps: Apps) -> None:
    answer, direct = await compare(apps, call("echo", {"text": "hi"}), headers())
    assert direct
    assert answer.status == 200
    assert answer.content_type == "application/json"
    assert json.loads(answer.body["result"]["content"][0]["text"]) == {"echo": {"text": "hi"}}
    assert answer.body["result"]["resultType"] == "complete"
    assert answer.body["result"]["_meta"]  # the server's identity, stamped as the SDK stamps it


@pytest.mark.parametrize("version", [MODERN, LEGACY])
async def test_an_answer_is_written_as_the_sdk_writes_it(apps: Apps, version: str) -> None:
    """Non-ASCII text, escaped or not as each era's transport writes it (a 2025 call without a session id is
    the SDK's to refuse when it keeps sessions)."""
    answer, direct = await compare(apps, call("say", {"text": "snow ☃ \u00e9\n"}, version), headers(version, "say"))
    if version == MODERN or apps.direct.stateless:
        assert direct
        assert answer.body["result"]["content"][0]["text"] == "snow ☃ \u00e9\n"


async def test_a_tool_error_is_the_same_result_either_way(apps: Apps) -> None:
    answer, direct = await compare(apps, call("echo", {"fail": True}, request_id="s-1"), headers())
    assert direct
    assert answer.body["id"] == "s-1"
    assert answer.body["result"]["isError"] is True


async def test_declared_param_headers_are_checked(apps: Apps) -> None:
    good, direct = await compare(
        apps, call("regional", {"region": "eu"}), headers(name="regional", **{"mcp-param-region": "eu"})
    )
    assert direct
    assert good.status == 200
    assert good.body["result"]["isError"] is False
    bad, direct = await compare(
        apps, call("regional", {"region": "eu"}), headers(name="regional", **{"mcp-param-region": "us"})
    )
    assert not direct
    assert bad.status == 400


@pytest.mark.parametrize(
    ("body", "sent"),
    [
        (call("nope", {}), headers(name="nope")),  # not a tool here: the alias table answers
        (call("echo", {}), headers(name="other")),  # Mcp-Name disagrees with the body
        (call("echo", "text"), headers()),  # arguments not an object
        ({**call("echo", {}), "params": {"name": "echo"}}, headers()),  # no _meta envelope
        (call("echo", {}), headers(accept="text/event-stream")),  # JSON not accepted
        (call("echo", {}), headers(**{"content-type": "text/plain"})),
        (call("echo", {}), headers(**{"mcp-protocol-version": "2099-01-01"})),
        ([call("echo", {})], headers()),  # a batch
        (call("echo", {}), [*headers().items(), ("mcp-name", "echo")]),  # a routing header twice, even if equal
    ],
    ids=[
        "unknown-tool",
        "name-mismatch",
        "bad-arguments",
        "no-envelope",
        "accept",
        "content-type",
        "version",
        "batch",
        "duplicated-header",
    ],
)
async def test_what_the_sdk_refuses_goes_to_the_sdk(apps: Apps, body: Any, sent: Headers) -> None:
    answer, direct = await compare(apps, body, sent)
    assert not direct
    assert answer.status >= 400 or "error" in answer.body or answer.body["result"]["isError"]


async def test_a_2025_call_is_direct_only_without_sessions(apps: Apps) -> None:
    if apps.direct.stateless:
        answer, direct = await compare(apps, call("echo", {"text": "hi"}, LEGACY), headers(LEGACY))
        assert direct
        assert answer.status == 200
        assert "resultType" not in answer.body["result"]  # a 2025 result carries no 2026 fields
        assert json.loads(answer.body["result"]["content"][0]["text"]) == {"echo": {"text": "hi"}}
        _, direct = await compare(apps, call("echo", {}, MODERN), headers(LEGACY))  # a 2026 envelope
        assert not direct
    else:
        asked = apps.behind.asked
        await ask(apps.direct, call("echo", {"text": "hi"}, LEGACY), headers(LEGACY))
        assert apps.behind.asked == asked + 1  # a session's requests are the SDK's
