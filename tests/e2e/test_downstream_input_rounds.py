"""A 2026-07-28-only server's input-required results reach a 2025-11-25 caller as the requests it knows (issue 33
item 2).

The downstream server is the toy server in `modern` mode (2026-07-28 only, over stdio): its `ask` tool needs two
rounds of input, a name and the roots, then a sample, and keeps what it learnt in an opaque `requestState` with
quotes, a backslash and non-ASCII in it. The caller is the MCP SDK's client in legacy mode (2025-11-25). Jarvis
asks the caller each request on the call's stream, calls the server again with the answers and the state it was
given, and the caller sees one complete result.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from tests.e2e.test_direct_proxy import MODERN
from tests.e2e.test_direct_proxy import request as tools_call
from tests.support.downstream import create_profile, create_toy, eventually, server_info, text_of
from tests.support.stack import RunningJarvis, mcp_client

pytestmark = pytest.mark.anyio

PROFILE = "rounds"
ROUND_ONE = 'round-1 "ünïcode" \\ ✓'  # the toy server's first requestState (tests/support/toy_server.py)


class Person:
    """A 2025-era client's user: gives a name, a root and a sampled greeting; records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(f"elicit: {params.message}")
        return types.ElicitResult(action="accept", content={"name": "alice"})

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        first = params.messages[0].content
        self.asked.append(f"sample: {first.text if isinstance(first, types.TextContent) else ''}")
        return types.CreateMessageResult(role="assistant", model="m", content=types.TextContent(text="Hi alice!"))

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(roots=[types.Root.model_validate({"uri": "file:///work/alice"})])


async def _install(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "asker", "modern")
        await create_profile(admin, PROFILE, "asker")

        async def reached_in_2026() -> bool:
            runtime = (await server_info(admin, "asker")).get("runtime") or {}
            return runtime.get("state") == "running" and runtime.get("speaks", [None])[0] == MODERN

        # Until Jarvis has reached the server once it cannot know a call may need questions (see the last test).
        await eventually(reached_in_2026, what="asker running, reached in 2026-07-28")


@pytest.fixture(scope="module")
def profile(hosted: RunningJarvis) -> str:
    anyio.run(_install, hosted)
    return hosted.url(f"/mcp/profile/{PROFILE}")


@asynccontextmanager
async def legacy_client(url: str, person: Person | None) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode="legacy",
            elicitation_callback=person.elicit if person else None,
            sampling_callback=person.sample if person else None,
            list_roots_callback=person.roots if person else None,
        ) as client,
    ):
        yield client


async def _rounds(client: Client) -> list[dict[str, Any]]:
    rounds: list[dict[str, Any]] = json.loads(text_of(await client.call_tool("asker__whoami", {})))["rounds"]
    return rounds


async def test_two_rounds_are_asked_of_the_caller_and_the_state_goes_back_byte_for_byte(profile: str) -> None:
    person = Person()
    async with legacy_client(profile, person) as client:
        answer = await client.call_tool("asker__ask", {})
        rounds = await _rounds(client)
    assert (text_of(answer), answer.is_error) == ("Hi alice! (alice; roots file:///work/alice)", False)
    assert sorted(person.asked[:2]) == ["elicit: Your name?", "roots"]
    assert person.asked[2:] == ["sample: Greet alice"]
    mine = rounds[-3:]
    assert [r["state"] for r in mine] == [
        None,
        ROUND_ONE,
        json.dumps({"name": "alice", "roots": ["file:///work/alice"]}),
    ]
    assert [r["answered"] for r in mine] == [[], ["name", "roots"], ["model"]]
    assert len({r["id"] for r in mine}) == 3  # each retry is a request of its own


async def test_nothing_of_one_call_is_carried_into_the_next(profile: str) -> None:
    async with legacy_client(profile, Person()) as client:
        await client.call_tool("asker__ask", {})
        await client.call_tool("asker__ask", {})
        rounds = await _rounds(client)
    assert [r["state"] for r in rounds[-6:]][::3] == [None, None]  # the second call starts afresh


async def test_the_server_sees_the_capabilities_of_the_caller_it_is_asking(profile: str) -> None:
    async with legacy_client(profile, Person()) as client:
        able = json.loads(text_of(await client.call_tool("asker__whoami", {})))["meta"]
    async with legacy_client(profile, None) as client:
        plain = json.loads(text_of(await client.call_tool("asker__whoami", {})))["meta"]
    assert set(able[CLIENT_CAPABILITIES_META_KEY]) == {"elicitation", "sampling", "roots"}
    assert plain[CLIENT_CAPABILITIES_META_KEY] == {}
    assert able[PROTOCOL_VERSION_META_KEY] == plain[PROTOCOL_VERSION_META_KEY] == MODERN


async def test_a_caller_without_the_capabilities_is_refused_by_the_server_and_it_keeps_serving(
    hosted: RunningJarvis, profile: str
) -> None:
    async with legacy_client(profile, None) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("asker__ask", {})
        plain = await client.call_tool("asker__echo", {"text": "still here"})
    assert refused.value.error.code == -32021
    assert "elicitation" in refused.value.error.message
    assert text_of(plain) == "still here"
    async with mcp_client(hosted.url()) as admin:
        assert (await server_info(admin, "asker"))["runtime"]["state"] == "running"


async def test_a_caller_that_cannot_answer_a_question_gets_the_reason(profile: str) -> None:
    async with legacy_client(profile, None) as client:
        refused = await client.call_tool("asker__nag", {})
    assert refused.is_error
    assert "server 'asker' needs its roots from you" in text_of(refused)
    assert "does not offer the 'roots' capability" in text_of(refused)


async def test_a_server_that_asks_forever_is_stopped_after_ten_rounds(profile: str) -> None:
    person = Person()
    async with legacy_client(profile, person) as client:
        answer = await client.call_tool("asker__nag", {})
    assert answer.is_error
    assert "still asked for input after 10 rounds" in text_of(answer)
    assert person.asked == ["roots"] * 10


def test_a_2026_caller_still_gets_the_input_required_result_to_answer_itself(profile: str) -> None:
    body, headers = tools_call(MODERN, "asker__ask", {})
    body["params"]["_meta"][CLIENT_CAPABILITIES_META_KEY] = {"elicitation": {}, "sampling": {}, "roots": {}}
    answer = httpx2.post(profile, json=body, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["resultType"] == "input_required"
    assert result["requestState"] == ROUND_ONE
    assert set(result["inputRequests"]) == {"name", "roots"}


async def test_the_first_call_to_a_server_not_reached_yet_says_to_call_again(hosted: RunningJarvis) -> None:
    """Before Jarvis has reached a server it cannot know the server asks in rounds, so a 2025-era caller's first
    call may have answered with a body, which carries no question: the error says to call again, and that works."""
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "fresh", "modern")
        await create_profile(admin, "fresh-rounds", "fresh", "asker")
    async with legacy_client(hosted.url("/mcp/profile/fresh-rounds"), Person()) as client:
        first = await client.call_tool("fresh__ask", {})
        again = await client.call_tool("fresh__ask", {})
    if first.is_error:  # the server had not been reached when the call was routed
        assert "call the tool again" in text_of(first)
    assert (text_of(again), again.is_error) == ("Hi alice! (alice; roots file:///work/alice)", False)


async def test_tool_call_on_the_discovery_surface_says_where_the_questions_can_be_answered(
    hosted: RunningJarvis, profile: str
) -> None:
    async with mcp_client(hosted.url("/mcp")) as client:
        answer = await client.call_tool("tool_call", {"name": "asker__nag", "arguments": {}})
    assert answer.is_error
    assert "server 'asker' asks for input to finish nag" in text_of(answer)
    assert "/mcp/profile/<name>" in text_of(answer)
