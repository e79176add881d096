"""Traces (issue 50): one call followed from the client, through Jarvis, its pipeline and its services, to the
downstream server, received as real OTLP/HTTP by a receiver started here (tests/support/otlp_receiver.py)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

from tests.support.downstream import FAST_ENV, create_profile, create_toy, reference
from tests.support.otlp_receiver import ReceivedSpan, Receiver, otlp_receiver
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis
from tests.support.waterfall import waterfall_svg

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
CLIENT_SPAN = "00f067aa0ba902b7"  # the client's own span, the parent it sends
SERVER_KIND, CLIENT_KIND = 2, 3  # OTLP's SpanKind numbers
WATERFALL = Path(__file__).resolve().parents[2] / "docs" / "images" / "trace-waterfall.svg"
_ids = itertools.count(1)
_traces = itertools.count(1)


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningJarvis, Receiver, str]]:
    with otlp_receiver() as receiver:
        home = tmp_path_factory.mktemp("home")
        env = {
            **FAST_ENV,
            "HOME": str(home),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        running = start_jarvis(tmp_path_factory.mktemp("traced"), "--require-auth", env=env)
        admin = running.create_token("admin", name="admin")

        async def setup() -> None:
            async with mcp_client(running.url(), admin) as client:
                await create_toy(client, "tr", mode="modern")
                await create_profile(client, "tr", "tr")

        asyncio.run(setup())
        try:
            yield running, receiver, admin
        finally:
            running.stop()


def new_trace() -> str:
    return f"{next(_traces):032x}"


def call(
    jarvis: RunningJarvis,
    token: str,
    path: str,
    tool: str,
    arguments: dict[str, Any],
    trace_id: str,
    *,
    in_header: bool = False,
    http: httpx2.Client | None = None,
) -> Any:
    """A 2026-07-28 tools/call whose `_meta` (SEP-414), or else its HTTP headers, carry the client's trace context;
    on `http`'s connection where given (one worker's, where there are several)."""
    parent = f"00-{trace_id}-{CLIENT_SPAN}-01"
    meta = {
        PROTOCOL_VERSION_META_KEY: MODERN,
        CLIENT_CAPABILITIES_META_KEY: {},
        CLIENT_INFO_META_KEY: {"name": "traced", "version": "1"},
    }
    if not in_header:
        meta["traceparent"] = parent
    body = {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": tool,
        "authorization": f"Bearer {token}",
    }
    if in_header:
        headers["traceparent"] = parent
    answer = (http or httpx2).post(jarvis.url(path), content=json.dumps(body), headers=headers, timeout=30).json()
    assert "result" in answer, answer
    return answer["result"]


def direct_calls(jarvis: RunningJarvis, token: str, surface: str) -> float:
    """How many tool calls of `surface` skipped the SDK's per-request machinery (direct_calls.py)."""
    text = httpx2.get(jarvis.url("/metrics"), headers={"authorization": f"Bearer {token}"}, timeout=30).text
    series = f'jarvis_direct_tool_calls_total{{surface="{surface}"}}'
    line = next((x for x in text.splitlines() if x.startswith(series)), "")
    return float(line.split()[-1]) if line else 0.0


def named(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


STEPS = ("scope", "rate limit", "withheld", "consent")
# A step has a span only where it took time (a millisecond of its own) or refused: these checks take microseconds,
# so on a quiet machine the backend is the call's child; a step a pause slowed is a span between them, in order.
STEP_CHAINS = [[step for i, step in enumerate(STEPS) if kept >> i & 1] for kept in range(2 ** len(STEPS))]


def steps_between(spans: list[ReceivedSpan], child: ReceivedSpan, ancestor: ReceivedSpan) -> list[str]:
    """The names of the spans from `ancestor` down to `child`'s parent (`child` must descend from `ancestor`)."""
    by_id, names = {s.span_id: s for s in spans}, list[str]()
    parent = by_id[child.parent_id]
    while parent.span_id != ancestor.span_id:
        names.insert(0, parent.name)
        parent = by_id[parent.parent_id]
    return names


def test_a_profile_call_is_one_trace_from_the_client_to_the_stdio_server(
    traced: tuple[RunningJarvis, Receiver, str],
) -> None:
    jarvis, receiver, admin = traced
    trace_id = new_trace()
    result = call(jarvis, admin, "/mcp/profile/tr", "tr__whoami", {}, trace_id)
    # The server got the same trace, as the child of Jarvis's span for its call, not of the client's.
    sent = result["structuredContent"]["meta"]["traceparent"]
    _, sent_trace, sent_parent, _ = sent.split("-")
    assert sent_trace == trace_id
    spans = receiver.wait_for(lambda s: any(x.name == "tools/call tr__whoami" for x in s), trace_id)  # it ends last
    request = named(spans, "tools/call tr__whoami")
    assert (request.parent_id, request.kind) == (CLIENT_SPAN, SERVER_KIND)
    pipeline = named(spans, "call tr__whoami")
    assert pipeline.parent_id == request.span_id
    # `route` where the profile had to start the server to learn its tools; Jarvis may have started it in the
    # background since its install, and then routing is a lookup with no span (the next test makes it deterministic).
    for route in [s for s in spans if s.name == "route"]:
        assert route.parent_id == request.span_id
        assert route.end_ns <= pipeline.start_ns
    assert pipeline.attributes["jarvis.backend"] == "shared"
    assert pipeline.attributes["jarvis.downstream.server"] == "tr"
    assert pipeline.attributes["jarvis.outcome"] == "ok"
    backend = named(spans, "backend tr")
    assert backend.kind == CLIENT_KIND
    assert steps_between(spans, backend, pipeline) in STEP_CHAINS
    assert sent_parent == backend.span_id
    assert {s.service for s in spans} == {"jarvis"}
    drawn = waterfall_svg(spans, "one proxied call: tools/call tr__whoami on /mcp/profile/tr")
    assert drawn.count("<rect") == len(spans)
    if os.environ.get("JARVIS_DRAW_DOCS"):  # `JARVIS_DRAW_DOCS=1 pytest tests/e2e/test_traces.py` redraws the docs' one
        WATERFALL.write_text(drawn)


def test_route_is_a_span_only_where_a_server_had_to_start_to_learn_its_tools(
    traced: tuple[RunningJarvis, Receiver, str],
) -> None:
    """A server that takes 2 s to start, called right after its install: the call waits in `route` for its tools. Its
    second call finds them known, and routing is then a lookup, worth no span."""
    jarvis, receiver, admin = traced

    async def install() -> None:
        async with mcp_client(jarvis.url(), admin) as client:
            await create_toy(client, "slow", mode="slowstart", TOY_START_SECONDS="2")
            await create_profile(client, "slow", "slow")

    asyncio.run(install())
    cold, warm = new_trace(), new_trace()
    for trace_id in (cold, warm):
        call(jarvis, admin, "/mcp/profile/slow", "slow__whoami", {}, trace_id)
    first = receiver.wait_for(lambda s: any(x.name == "tools/call slow__whoami" for x in s), cold)
    route, request = named(first, "route"), named(first, "tools/call slow__whoami")
    assert route.parent_id == request.span_id
    assert route.end_ns - route.start_ns > 1_000_000_000  # it waited for the server's start
    assert route.end_ns <= named(first, "call slow__whoami").start_ns
    second = receiver.wait_for(lambda s: any(x.name == "tools/call slow__whoami" for x in s), warm)
    assert not [s for s in second if s.name == "route"], [s.name for s in second]


def test_a_streamable_http_server_gets_the_trace_in_its_headers_and_its_meta(
    traced: tuple[RunningJarvis, Receiver, str], tmp_path: Path
) -> None:
    jarvis, receiver, admin = traced
    record = tmp_path / "requests.jsonl"
    with reference(record) as url:  # the SDK's own server, dual-era, recording what each request carried

        async def install() -> None:
            async with mcp_client(jarvis.url(), admin) as client:
                create = {"action": "create", "name": "ht", "type": "streamable-http", "url": url}
                result_json(await client.call_tool("jarvis_server", create))
                await create_profile(client, "ht", "ht")

        asyncio.run(install())
        trace_id = new_trace()
        call(jarvis, admin, "/mcp/profile/ht", "ht__test_simple_text", {}, trace_id)
        spans = receiver.wait_for(lambda s: any(x.name == "tools/call ht__test_simple_text" for x in s), trace_id)
    received = [json.loads(line) for line in record.read_text().splitlines()]
    [called] = [entry for entry in received if entry["method"] == "tools/call"]
    # Both carriers name the same span: Jarvis's span for the call to this server, under the client's trace.
    assert called["traceparentHeader"] == called["traceparentMeta"], called
    _, sent_trace, sent_parent, _ = called["traceparentHeader"].split("-")
    assert sent_trace == trace_id
    backend = named(spans, "backend ht")
    assert (sent_parent, backend.kind) == (backend.span_id, CLIENT_KIND)
    request = named(spans, "tools/call ht__test_simple_text")
    assert (request.parent_id, request.kind) == (CLIENT_SPAN, SERVER_KIND)
    pipeline = named(spans, "call ht__test_simple_text")
    assert pipeline.parent_id == request.span_id
    assert pipeline.attributes["jarvis.downstream.server"] == "ht"
    assert steps_between(spans, backend, pipeline) in STEP_CHAINS
    # The registry's part: no registry call is on this call's path (the profile and server are known), but its audit
    # record goes to the registry in a batch (usage.py), whose RecordUsage span links to the call's span, and whose
    # registry-side span is that client span's child: the context crossed gRPC.
    recording = receiver.linking_to(pipeline)
    assert (recording.name, recording.kind) == ("registry/RecordUsage", CLIENT_KIND)
    assert recording.attributes["rpc.system"] == "grpc"
    batch = receiver.wait_for(lambda s: any(x.parent_id == recording.span_id for x in s), recording.trace_id)
    served = [s for s in batch if s.parent_id == recording.span_id]
    assert [(s.kind, s.attributes["rpc.method"]) for s in served] == [(SERVER_KIND, "RecordUsage")], served


def test_arguments_appear_by_name_only_and_a_refusal_sets_the_status(
    traced: tuple[RunningJarvis, Receiver, str],
) -> None:
    jarvis, receiver, _ = traced
    narrow = jarvis.create_token("servers:other", name="narrow")
    trace_id = new_trace()
    secret = "hunter2-do-not-trace"
    result = call(jarvis, narrow, "/mcp", "tool_call", {"name": "tr__echo", "arguments": {"text": secret}}, trace_id)
    assert result["isError"] is True
    spans = receiver.wait_for(lambda s: any(x.name == "call tr__echo" for x in s), trace_id)
    refused = named(spans, "call tr__echo")
    assert refused.attributes["jarvis.outcome"] == "denied"
    assert (refused.status_code, refused.status_message) == (2, "denied")  # STATUS_CODE_ERROR
    assert refused.attributes["jarvis.arguments"] == ["text"]
    # The step that refused has a span whatever its time, so a reader sees which policy it was.
    scope = named(spans, "scope")
    assert (scope.parent_id, scope.status_code, scope.status_message) == (refused.span_id, 2, "denied")
    assert not any(secret in json.dumps(s.attributes) for s in spans)
    assert not any(s.name == "backend tr" for s in spans)  # refused before the server


def test_a_registry_write_carries_the_trace_over_grpc(traced: tuple[RunningJarvis, Receiver, str]) -> None:
    jarvis, receiver, admin = traced
    trace_id = new_trace()
    arguments = {"action": "create", "name": f"p{trace_id[-6:]}", "servers": ["tr"]}
    before = direct_calls(jarvis, admin, "jarvis")
    call(jarvis, admin, "/mcp/jarvis", "jarvis_profile", arguments, trace_id)
    assert direct_calls(jarvis, admin, "jarvis") == before + 1  # traced, it still skips the SDK's machinery

    def grpc_pair(spans: list[ReceivedSpan]) -> bool:  # and the request's span, which ends (is sent) last
        served = any(s.kind == SERVER_KIND and s.attributes.get("rpc.system") == "grpc" for s in spans)
        return served and any(s.name == "tools/call jarvis_profile" for s in spans)

    spans = receiver.wait_for(grpc_pair, trace_id)
    request = named(spans, "tools/call jarvis_profile")  # the direct path's span, as the SDK's would be
    assert (request.parent_id, request.kind) == (CLIENT_SPAN, SERVER_KIND)
    assert request.attributes["gen_ai.tool.name"] == "jarvis_profile"
    clients = {s.span_id: s for s in spans if s.kind == CLIENT_KIND and s.attributes.get("rpc.system") == "grpc"}
    servers = [s for s in spans if s.kind == SERVER_KIND and s.attributes.get("rpc.system") == "grpc"]
    assert clients, [s.name for s in spans]
    # The registry's own span is the child of the aggregator's client span: the context crossed gRPC.
    assert any(server.parent_id in clients for server in servers), [(s.name, s.parent_id) for s in servers]
    assert any(s.name.startswith("registry/") for s in clients.values())


def test_a_traceparent_header_is_the_parent_where_meta_has_none(traced: tuple[RunningJarvis, Receiver, str]) -> None:
    jarvis, receiver, admin = traced
    trace_id = new_trace()
    call(jarvis, admin, "/mcp/profile/tr", "tr__echo", {"text": "hi"}, trace_id, in_header=True)
    spans = receiver.wait_for(lambda s: any(x.name == "tools/call tr__echo" for x in s), trace_id)
    assert named(spans, "tools/call tr__echo").parent_id == CLIENT_SPAN


def exemplar_buckets(jarvis: RunningJarvis, token: str, trace_id: str, http: httpx2.Client | None = None) -> list[str]:
    """The `tr` server's latency buckets whose exemplar names `trace_id`, in an OpenMetrics scrape (as Prometheus
    asks for it); on `http`'s connection where given."""
    headers = {"authorization": f"Bearer {token}", "accept": "application/openmetrics-text; version=1.0.0"}
    answer = (http or httpx2).get(jarvis.url("/metrics"), headers=headers, timeout=30)
    assert answer.headers["content-type"].startswith("application/openmetrics-text")
    return [
        line
        for line in answer.text.splitlines()
        if line.startswith("jarvis_downstream_call_seconds_bucket{")
        and 'server="tr"' in line
        and f'trace_id="{trace_id}"' in line
    ]


def exemplar_value(bucket: str) -> float:
    """The observed latency an exemplar line carries (`... # {trace_id="..."} <value> <timestamp>`)."""
    return float(bucket.split(" # ")[1].split()[1])


def test_a_slow_calls_latency_bucket_names_its_trace(traced: tuple[RunningJarvis, Receiver, str]) -> None:
    jarvis, receiver, admin = traced
    trace_id = new_trace()
    call(jarvis, admin, "/mcp/profile/tr", "tr__slow", {"seconds": 0.6}, trace_id)
    receiver.wait_for(lambda s: any(x.name == "backend tr" for x in s), trace_id)
    buckets = exemplar_buckets(jarvis, admin, trace_id)
    assert buckets
    # The exemplar sits in the bucket its call's latency fell in: at least the 0.6 s the server slept.
    assert exemplar_value(buckets[0]) >= 0.6
