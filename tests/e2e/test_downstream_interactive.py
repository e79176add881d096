"""Sampling and elicitation a downstream server asks of its client during a tool call, relayed through a
real `jarvis up` to the agent that made the call (server-everything from npm, listed in `servers.interactive`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from tests.support.downstream import (
    create_profile,
    create_server,
    eventually,
    everything_server,
    server_info,
    text_of,
)
from tests.support.stack import RunningJarvis, mcp_client, result_json

pytestmark = pytest.mark.anyio


HOSTED_ENV = {"JARVIS_AGGREGATOR_DOWNSTREAM_CALL_TIMEOUT": "3"}


class Agent:
    """A client that can sample (answers with its own name) and fill in forms; records what it was asked."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.prompts: list[str] = []
        self.forms: list[str] = []

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        first = params.messages[0].content
        self.prompts.append(first.text if isinstance(first, types.TextContent) else "")
        await asyncio.sleep(0.2)  # long enough for another agent's call to be under way meanwhile
        return types.CreateMessageResult(
            role="assistant", model="agent-model", content=types.TextContent(text=f"sampled by {self.name}")
        )

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.forms.append(params.message)
        return types.ElicitResult(action="accept", content={"name": self.name, "check": True})


async def interactive_server(admin: Client, jarvis: RunningJarvis, name: str, profile: str, *others: str) -> None:
    """server-everything as `name`, the one server in `servers.interactive`, in `profile` (with `others`)."""
    await create_server(admin, name, everything_server())
    result_json(
        await admin.call_tool("jarvis_config", {"action": "set", "key": "servers.interactive", "value": [name]})
    )
    await create_profile(admin, profile, name, *others)
    # If discovery had started it, without the capabilities, it is restarted with them; if not, listing the profile
    # starts it, as an agent's first request would. Either way server-everything then registers the tools that ask
    # their caller.
    await eventually(
        lambda: _lists(
            jarvis.url(f"/mcp/profile/{profile}"),
            f"{name}__trigger-sampling-request",
            f"{name}__trigger-elicitation-request",
        ),
        what=f"{name} serving as an interactive server",
    )


@asynccontextmanager
async def connected(url: str, agent: Agent | None) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(timeout=60) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(
            transport,
            mode="legacy",
            sampling_callback=agent.sample if agent else None,
            elicitation_callback=agent.elicit if agent else None,
        ) as client:
            yield client


async def test_sampling_and_elicitation_reach_the_calling_agent(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_server(admin, "quiet", everything_server())
        await interactive_server(admin, hosted, "asker", "asking", "quiet")
    alice, bob = Agent("alice"), Agent("bob")
    url = hosted.url("/mcp/profile/asking")
    async with connected(url, alice) as first, connected(url, bob) as second:
        names = {t.name for t in (await first.list_tools()).tools}
        # server-everything registers these only for a client that offers the capability: Jarvis offered it
        # to the interactive server, and not to the other one.
        assert {"asker__trigger-sampling-request", "asker__trigger-elicitation-request"} <= names
        assert "quiet__trigger-sampling-request" not in names
        # Two agents at once: each request reaches the agent whose call it belongs to.
        sampled = await asyncio.gather(
            first.call_tool("asker__trigger-sampling-request", {"prompt": "from alice", "maxTokens": 5}),
            second.call_tool("asker__trigger-sampling-request", {"prompt": "from bob", "maxTokens": 5}),
        )
        elicited = await first.call_tool("asker__trigger-elicitation-request", {})
    assert [r.is_error for r in sampled] == [False, False]
    assert "sampled by alice" in text_of(sampled[0])
    assert "sampled by bob" in text_of(sampled[1])
    assert alice.prompts == ["Resource trigger-sampling-request context: from alice"]
    assert bob.prompts == ["Resource trigger-sampling-request context: from bob"]
    assert not elicited.is_error
    assert "alice" in text_of(elicited)
    assert alice.forms == ["Please provide inputs for the following fields:"]
    assert bob.forms == []


async def test_a_caller_that_cannot_sample_gets_the_reason(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await interactive_server(admin, hosted, "asker2", "asking2")
    async with connected(hosted.url("/mcp/profile/asking2"), None) as plain:
        answer = await plain.call_tool("asker2__trigger-sampling-request", {"prompt": "anyone?", "maxTokens": 5})
    assert answer.is_error
    assert "does not support sampling" in text_of(answer)
    async with mcp_client(hosted.url()) as admin:
        assert (await server_info(admin, "asker2"))["runtime"]["state"] == "running"  # the server is fine


async def _lists(profile_url: str, *tools: str) -> bool:
    async with mcp_client(profile_url) as caller:
        listed = {tool.name for tool in (await caller.list_tools()).tools}
    return all(tool in listed for tool in tools)


class AbsentAgent(Agent):
    """Offers elicitation, then never answers (a person who walked away)."""

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.forms.append(params.message)
        await asyncio.sleep(60)
        return types.ElicitResult(action="cancel")


async def test_a_caller_who_never_answers_holds_the_server_only_until_the_call_timeout(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await interactive_server(admin, hosted, "asker3", "asking3")
    url = hosted.url("/mcp/profile/asking3")
    absent, alice = AbsentAgent("absent"), Agent("alice")
    async with connected(url, absent) as first, connected(url, alice) as second:
        stuck = asyncio.ensure_future(first.call_tool("asker3__trigger-elicitation-request", {}))
        await eventually(lambda: _asked(absent), what="the first caller was asked")
        waited = await second.call_tool("asker3__trigger-sampling-request", {"prompt": "next", "maxTokens": 5})
        timed_out = await stuck
    assert timed_out.is_error
    assert "within 3 s" in text_of(timed_out)
    assert not waited.is_error  # it took its turn once the unanswered call had timed out
    assert "sampled by alice" in text_of(waited)


async def _asked(agent: Agent) -> bool:
    return bool(agent.forms)
