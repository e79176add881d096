"""Proxied tool calls on the direct path (downstream/proxy/direct.py) get the answers the SDK's path gives.

Two `jarvis up` stacks, stateless (so a 2025-11-25 request without a session may take the path too), the second
with `direct_tool_calls` off, each with a profile of two reference servers (tests/support/reference_server.py):
`ref` over stdio (reached in the 2025 era, so a 2026-07-28 caller is bridged) and `web` over streamable HTTP
(2026-07-28 end to end: input-required results, tasks). Every request goes raw over HTTP to both, in both
protocol versions, and the answers must be equal once what each stack mints itself is masked (task ids, sealed
request states, times).
`jarvis_direct_tool_calls_total{surface="profile"}` shows which path answered: it counts exactly the calls the
direct path may take on the first stack, and nothing on the second. The switch also decides how a 2026-07-28
request reaches `web`: on Jarvis's own connections (downstream/transport/http_calls.py) on the first stack, through the
SDK's client on the second, so every comparison of `web`'s answers compares those two as well.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

from jarvis.aggregator.downstream.transport.answers import FIRST_ID
from jarvis.aggregator.downstream.transport.http_calls import USER_AGENT
from tests.e2e.test_downstream_conformance import REFERENCE, _reference
from tests.support.downstream import FAST_ENV, create_profile, create_server
from tests.support.stack import RunningJarvis, mcp_client, start_jarvis

MODERN, LEGACY = "2026-07-28", "2025-11-25"
TASKS = "io.modelcontextprotocol/tasks"
PROFILE = "direct"
# Minted by each stack's own reference server process or Jarvis: equal in shape, not in value.
MINTED = {"taskId", "requestState", "createdAt", "lastUpdatedAt"}
_ids = itertools.count(1)


@dataclass(frozen=True)
class Stacks:
    direct: RunningJarvis
    sdk: RunningJarvis


def _start(workdir: Path, direct: bool) -> RunningJarvis:
    env = {
        "HOME": str(workdir),
        "JARVIS_AGGREGATOR_DIRECT_TOOL_CALLS": str(direct).lower(),
        **FAST_ENV,
    }
    return start_jarvis(workdir / "jarvis", "--stateless", env=env)


async def _install(jarvis: RunningJarvis, web: str) -> None:
    async with mcp_client(jarvis.url()) as admin:
        await create_server(admin, "ref", [sys.executable, str(REFERENCE), "stdio"])
        await admin.call_tool(
            "jarvis_server", {"action": "create", "name": "web", "type": "streamable-http", "url": web}
        )
        await create_profile(admin, PROFILE, "ref", "web")
    async with mcp_client(jarvis.url(f"/mcp/profile/{PROFILE}")) as caller:
        listed = {t.name for t in (await caller.list_tools()).tools}
        assert {"ref__test_simple_text", "web__test_simple_text"} <= listed


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stacks]:
    started: list[RunningJarvis] = []
    with _reference(tmp_path_factory.mktemp("web")) as web:
        try:
            for direct in (True, False):
                started.append(_start(tmp_path_factory.mktemp("direct" if direct else "sdk"), direct))
                anyio.run(_install, started[-1], web)
            yield Stacks(*started)
        finally:
            for jarvis in started:
                jarvis.stop()


def request(
    version: str, tool: str, arguments: dict[str, Any], *, extensions: dict[str, Any] | None = None, **meta: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    """A tools/call body and its headers as an SDK client of `version` sends them."""
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    headers["mcp-protocol-version"] = version
    if version == MODERN:
        meta |= {
            PROTOCOL_VERSION_META_KEY: MODERN,
            CLIENT_CAPABILITIES_META_KEY: {"extensions": extensions} if extensions else {},
            CLIENT_INFO_META_KEY: {"name": "test", "version": "1"},
        }
        headers |= {"mcp-method": "tools/call", "mcp-name": tool}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": params}, headers


def masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "<minted>" if k in MINTED else masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def direct_count(jarvis: RunningJarvis) -> float:
    found = re.search(
        r'^jarvis_direct_tool_calls_total\{surface="profile"\} (\S+)$',
        httpx2.get(jarvis.url("/metrics")).text,
        re.MULTILINE,
    )
    return float(found.group(1)) if found else 0.0


def post(jarvis: RunningJarvis, body: dict[str, Any], headers: dict[str, str]) -> httpx2.Response:
    return httpx2.post(jarvis.url(f"/mcp/profile/{PROFILE}"), content=json.dumps(body), headers=headers, timeout=30)


def both(stacks: Stacks, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, str, Any, bool]:
    """Status, content type and (masked) body, asserted equal on both stacks, and whether the direct path
    answered on the first (its counter moved) while the second's stayed at zero."""
    before = direct_count(stacks.direct)
    got, expected = post(stacks.direct, body, headers), post(stacks.sdk, body, headers)
    taken = direct_count(stacks.direct) - before
    assert direct_count(stacks.sdk) == 0
    content_type = got.headers["content-type"]
    assert (got.status_code, content_type) == (expected.status_code, expected.headers["content-type"])
    if content_type == "application/json":
        answer = masked(got.json())
        assert answer == masked(expected.json())
    else:
        answer = got.text
    return got.status_code, content_type, answer, taken == 1


@pytest.mark.parametrize("server", ["ref", "web"])
@pytest.mark.parametrize("version", [LEGACY, MODERN])
@pytest.mark.parametrize(
    "tool",
    ["test_simple_text", "test_multiple_content_types", "test_resource_links", "test_error_handling", "greet"],
)
def test_a_listed_tools_call_takes_the_direct_path_with_the_sdks_answer(
    stacks: Stacks, server: str, version: str, tool: str
) -> None:
    arguments = {"name": "Ada"} if tool == "greet" else {}
    status, _, answer, direct = both(stacks, *request(version, f"{server}__{tool}", arguments))
    assert direct
    assert status == 200
    result = answer["result"]
    assert bool(result.get("isError")) == (tool == "test_error_handling")
    if version == MODERN:
        assert result["resultType"] == "complete"
    if tool == "test_resource_links":  # a prefixed profile says whose each linked resource is
        assert all(block["uri" if "uri" in block else "resource"] for block in result["content"])
        assert f"jarvis://{server}/" in json.dumps(result["content"])


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_a_call_reaches_an_http_server_on_jarvis_own_connections(stacks: Stacks, version: str) -> None:
    agents = [
        post(jarvis, *request(version, "web__test_user_agent", {})).json()["result"]["content"][0]["text"]
        for jarvis in (stacks.direct, stacks.sdk)
    ]
    assert agents[0] == USER_AGENT
    assert agents[1].startswith("python-httpx")


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_a_call_reaches_a_stdio_server_as_jarvis_own_line(stacks: Stacks, version: str) -> None:
    """Jarvis's own lines (downstream/transport/pipe_calls.py) carry ids from FIRST_ID up; the SDK's session counts
    from 0."""
    ids = [
        int(post(jarvis, *request(version, "ref__test_request_id", {})).json()["result"]["content"][0]["text"])
        for jarvis in (stacks.direct, stacks.sdk)
    ]
    assert ids[0] > FIRST_ID
    assert ids[1] < FIRST_ID


def test_arguments_the_server_refuses_come_back_the_same(stacks: Stacks) -> None:
    status, _, answer, direct = both(stacks, *request(MODERN, "ref__greet", {"name": 42}))
    assert direct
    assert status == 200
    assert answer["result"]["isError"] is True


def test_an_input_required_result_is_relayed_with_its_request_state(stacks: Stacks) -> None:
    status, _, answer, direct = both(stacks, *request(MODERN, "web__test_input_required_result_request_state", {}))
    assert direct
    assert status == 200
    assert answer["result"]["resultType"] == "input_required"
    assert answer["result"]["requestState"] == "<minted>"


def test_a_servers_protocol_error_is_the_same_error(stacks: Stacks) -> None:
    """The server refuses a caller without sampling with -32021 (SEP-2575): a JSON-RPC error, not a result."""
    status, _, answer, direct = both(stacks, *request(MODERN, "web__test_missing_capability", {}))
    assert direct
    assert answer["error"]["code"] == -32021
    assert status != 200


def test_a_task_is_handed_out_under_a_handle(stacks: Stacks) -> None:
    body, headers = request(MODERN, "web__slow_compute", {"seconds": 0.1}, extensions={TASKS: {}})
    status, _, answer, direct = both(stacks, body, headers)
    assert direct
    assert status == 200
    assert answer["result"]["resultType"] == "task"
    handle = post(stacks.direct, body, headers).json()["result"]["taskId"]
    assert handle.startswith("jt1.")  # Jarvis's sealed handle, never the server's own id


def test_matching_param_headers_pass_and_a_mismatch_is_the_sdks_400(stacks: Stacks) -> None:
    body, headers = request(MODERN, "web__test_custom_header", {"region": "eu"})
    status, _, answer, direct = both(stacks, body, headers | {"mcp-param-region": "eu"})
    assert direct
    assert answer["result"]["content"][0]["text"] == "region=eu query="
    status, _, _, direct = both(stacks, body, headers | {"mcp-param-region": "us"})
    assert not direct
    assert status == 400


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_an_unknown_tool_is_left_to_the_sdk(stacks: Stacks, version: str) -> None:
    _, _, answer, direct = both(stacks, *request(version, "ref__no_such_tool", {}))
    assert not direct
    assert "no_such_tool" in json.dumps(answer)


@pytest.mark.parametrize("server", ["ref", "web"])
def test_a_call_that_wants_progress_streams_through_the_sdk(stacks: Stacks, server: str) -> None:
    body, headers = request(MODERN, f"{server}__test_tool_with_progress", {}, progressToken="p-1")
    status, content_type, _, direct = both(stacks, body, headers)
    assert not direct
    assert status == 200
    assert content_type.startswith("text/event-stream")
    # The same reports, in order, under the caller's token, whichever client reached the server.
    reports = [progress_reports(post(jarvis, body, headers).text) for jarvis in (stacks.direct, stacks.sdk)]
    assert reports[0] == reports[1] == [("p-1", 0), ("p-1", 50), ("p-1", 100)]


def progress_reports(stream: str) -> list[tuple[Any, Any]]:
    frames = [json.loads(line[5:]) for line in stream.splitlines() if line.startswith("data:") and line[5:].strip()]
    return [
        (f["params"]["progressToken"], f["params"]["progress"])
        for f in frames
        if f.get("method") == "notifications/progress"
    ]
