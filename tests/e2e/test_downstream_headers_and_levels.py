"""Issue 47 items 2 and 5 on a real `jarvis up` that requires tokens.

A toy server (tests/support/toy_server.py, `badheaders`) also lists the tools of the conformance scenario
`http-invalid-tool-headers` whose `x-mcp-header` declarations are invalid (SEP-2243): no surface lists them, a call to
them is refused, and Jarvis's log names each one with the rule it breaks. `logging/setLevel` on a surface that stands
for one server (an unprefixed one-server profile, as `jarvis client edit --add time` writes, and a share) answers as on
a prefixed profile, even for a server without logging (mcp-server-time), and the MCP Inspector CLI lists tools there.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.e2e.test_runtime_modes import _inspector
from tests.support.downstream import FAST_ENV, create_profile, create_server, create_toy, text_of, time_server
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

INVALID = (
    "invalid_empty_header",
    "invalid_object_header",
    "invalid_array_header",
    "invalid_null_header",
    "invalid_number_header",
    "invalid_duplicate_same_case",
    "invalid_duplicate_diff_case",
    "invalid_space_in_name",
    "invalid_colon_in_name",
    "invalid_non_ascii_name",
    "invalid_control_char_name",
)
RECEIVED = "Tool call received"  # what the toy answers any call to these tools that reaches it


@dataclass
class Stack:
    jarvis: RunningJarvis
    token: str  # an admin's: every surface
    shares: dict[str, str]  # server -> its share's token

    def warnings_for(self, tool: str) -> int:
        return self.jarvis.log().count(f"tool {tool} of downstream server headers left out")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("home")
    jarvis = start_jarvis(tmp_path_factory.mktemp("data"), "--require-auth", env={"HOME": str(home), **FAST_ENV})
    try:
        token = jarvis.create_token("admin", name="admin")
        shares = anyio.run(_install, jarvis, token)
        yield Stack(jarvis, token, shares)
    finally:
        jarvis.stop()
        print(jarvis.log()[-6000:])  # shown with a failing test's output


async def _install(jarvis: RunningJarvis, token: str) -> dict[str, str]:
    async with mcp_client(jarvis.url(), token) as admin:
        await create_toy(admin, "headers", "badheaders")
        await create_server(admin, "clock", [time_server()])
        for name, server in (
            ("headed", "headers"),
            ("headed-solo", "headers"),
            ("timely", "clock"),
            ("clock-solo", "clock"),
        ):
            await create_profile(admin, name, server)
        unprefixed = {"action": "set", "key": "servers.unprefixed_profiles", "value": ["headed-solo", "clock-solo"]}
        result_json(await admin.call_tool("jarvis_config", unprefixed))
        shares = {}
        for server in ("headers", "clock"):
            start = {"action": "start", "name": server, "expires_in": 3600}
            shares[server] = result_json(await admin.call_tool("jarvis_share", start))["started"]["token"]
        return shares


async def _names(url: str, token: str) -> set[str]:
    async with mcp_client(url, token) as client:
        return {t.name for t in (await client.list_tools()).tools}


@pytest.mark.anyio
async def test_tools_with_invalid_header_declarations_are_listed_nowhere(stack: Stack) -> None:
    jarvis = stack.jarvis
    prefixed = await _names(jarvis.url("/mcp/profile/headed"), stack.token)
    assert "headers__valid_tool" in prefixed
    assert "headers__echo" in prefixed
    assert not {name for name in prefixed if "invalid" in name}
    for url, token in (
        (jarvis.url("/mcp/profile/headed-solo"), stack.token),
        (jarvis.url("/share/headers/mcp"), stack.shares["headers"]),
    ):
        transparent = await _names(url, token)
        assert "valid_tool" in transparent, url
        assert not transparent & set(INVALID), url
    # Each is named in Jarvis's log with the rule it breaks (the SDK's words for it).
    log = jarvis.log()
    for tool in INVALID:
        assert stack.warnings_for(tool) >= 1, tool
    assert "'My Region' is not an RFC 9110 token" in log
    assert "on property 'field1' duplicates property 'field2'" in log
    assert "only permitted on integer/string/boolean properties (got 'number')" in log


@pytest.mark.anyio
async def test_a_call_to_such_a_tool_is_refused_on_a_prefixed_profile(stack: Stack) -> None:
    before = {tool: stack.warnings_for(tool) for tool in INVALID}
    async with mcp_client(stack.jarvis.url("/mcp/profile/headed"), stack.token) as client:
        assert text_of(await client.call_tool("headers__valid_tool", {"region": "eu"})) == RECEIVED
        for tool in INVALID:
            with pytest.raises(MCPError, match="unknown tool"):
                await client.call_tool(f"headers__{tool}", {"value": "x"})
    # Warned once per load, not per call.
    assert {tool: stack.warnings_for(tool) for tool in INVALID} == before


@pytest.mark.anyio
async def test_a_call_to_such_a_tool_is_refused_on_a_surface_for_one_server(stack: Stack) -> None:
    jarvis = stack.jarvis
    for url, token in (
        (jarvis.url("/mcp/profile/headed-solo"), stack.token),
        (jarvis.url("/share/headers/mcp"), stack.shares["headers"]),
    ):
        async with mcp_client(url, token) as client:
            assert text_of(await client.call_tool("valid_tool", {"region": "eu"})) == RECEIVED
            answer = await client.call_tool("invalid_colon_in_name", {"value": "x"})
            assert answer.is_error, url
            assert RECEIVED not in text_of(answer), url


@pytest.mark.anyio
async def test_set_level_on_a_surface_for_one_server_answers_as_on_a_prefixed_profile(stack: Stack) -> None:
    """mcp-server-time declares no logging (it answers -32601 itself); Jarvis declares it on every surface."""
    jarvis = stack.jarvis
    for url, token in (
        (jarvis.url("/mcp/profile/timely"), stack.token),
        (jarvis.url("/mcp/profile/clock-solo"), stack.token),
        (jarvis.url("/share/clock/mcp"), stack.shares["clock"]),
    ):
        async with mcp_client(url, token) as client:
            await client.set_logging_level("info")
            assert text_of(await client.call_tool(_time_tool(url), {"timezone": "UTC"}))


def _time_tool(url: str) -> str:
    return "clock__get_current_time" if url.endswith("/timely") else "get_current_time"


@pytest.mark.anyio
async def test_the_inspector_lists_tools_on_a_surface_for_one_server(stack: Stack) -> None:
    jarvis = stack.jarvis
    for url, token in (
        (jarvis.url("/mcp/profile/clock-solo"), stack.token),
        (jarvis.url("/share/clock/mcp"), stack.shares["clock"]),
    ):
        listed = await anyio.to_thread.run_sync(_inspect, url, token)
        assert sorted(t["name"] for t in listed["tools"]) == ["convert_time", "get_current_time"], url


def _inspect(url: str, token: str) -> Any:
    run = subprocess.run(
        [
            *_inspector(),
            "--cli",
            url,
            "--transport",
            "http",
            "--header",
            f"Authorization: Bearer {token}",
            "--method",
            "tools/list",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).parent,
    )
    assert run.returncode == 0, (url, run.stdout[-2000:], run.stderr[-2000:])
    return json.loads(run.stdout)
