"""Aggregation (issue 13 item 3): a profile of several servers serves every server's tools, resources, resource
templates, prompts and completions under prefixed names and namespaced URIs (`jarvis://<server>/<uri>`), merges
lists with the strictest caching hint, and fans resource subscriptions out to the owning server, for a 2025-11-25
client and a 2026-07-28 client alike (the mcp SDK's own client over real HTTP).

The servers: two reference servers (tests/support/reference_server.py, both 2025-11-25 and 2026-07-28, over
streamable HTTP, with different caching hints and the same URIs) and `server-everything` from npm (2025-11-25
only, stdio, `demo://` URIs). Each reference server records every request it receives, so the tests see what
reached which server, and that nothing reached one it should not.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

from tests.e2e.test_downstream_conformance import REFERENCE, _wait_listening
from tests.support.downstream import FAST_ENV, create_profile, create_server, everything_server
from tests.support.stack import RunningJarvis, free_port, mcp_client, result_json, start_jarvis

pytestmark = [pytest.mark.anyio, pytest.mark.node]

LEGACY, MODERN = "legacy", "2026-07-28"
MODES = (LEGACY, MODERN)
# The reference servers' caching hints: the merged listing must carry the shortest ttl, and private over public.
CACHE = {"alpha": "60000:public", "beta": "30000:private"}
WATCHED = "test://watched-resource"


@dataclass
class Downstream:
    name: str
    url: str
    record: Path

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        lines = self.record.read_text().splitlines() if self.record.exists() else []
        entries = [json.loads(line) for line in lines]
        return [e for e in entries if method is None or e["method"] == method]


@dataclass
class Stack:
    jarvis: RunningJarvis
    alpha: Downstream
    beta: Downstream

    def profile(self, name: str) -> str:
        return self.jarvis.url(f"/mcp/profile/{name}")


@contextlib.contextmanager
def _reference(workdir: Path, name: str, **settings: str) -> Iterator[Downstream]:
    """A reference server recording what reaches it; `settings` are more of its REFERENCE_* variables."""
    port = free_port()
    record = workdir / f"{name}.requests"
    env = {"REFERENCE_CACHE": CACHE.get(name, "60000:private"), "REFERENCE_RECORD": str(record), **settings}
    with (workdir / f"{name}.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, str(REFERENCE), str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
        )
        try:
            _wait_listening(port, process)
            yield Downstream(name, f"http://127.0.0.1:{port}/mcp", record)
        finally:
            process.terminate()
            process.wait(10)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("aggregation")
    with _reference(workdir, "alpha") as alpha, _reference(workdir, "beta") as beta:
        jarvis = start_jarvis(workdir / "jarvis", env={"HOME": str(workdir), **FAST_ENV})
        try:
            anyio.run(_install, jarvis, alpha, beta)
            yield Stack(jarvis, alpha, beta)
        finally:
            jarvis.stop()


async def _install(jarvis: RunningJarvis, alpha: Downstream, beta: Downstream) -> None:
    async with mcp_client(jarvis.url()) as admin:
        for server in (alpha, beta):
            result_json(
                await admin.call_tool(
                    "jarvis_server",
                    {"action": "create", "name": server.name, "type": "streamable-http", "url": server.url},
                )
            )
        await create_server(admin, "everything", everything_server())
        await create_server(admin, "gamma", [sys.executable, str(REFERENCE), "stdio"])
        await create_profile(admin, "solo", "alpha")  # one server, prefixed: not listed as unprefixed
        await create_profile(admin, "pair", "alpha", "beta")
        await create_profile(admin, "trio", "alpha", "beta", "everything")
        await create_profile(admin, "spawned", "alpha", "gamma")


@contextlib.asynccontextmanager
async def client(url: str, mode: str, token: str | None = None, **options: Any) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(timeout=60, headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, **options) as connected,
    ):
        yield connected


def text(result: Any) -> str:
    block = result.content[0] if hasattr(result, "content") else result.contents[0]
    return str(block.text)


# ------------------------------------------------------------------ every server, routed by its names


@pytest.mark.parametrize("mode", MODES)
async def test_every_server_is_listed_and_reached_under_its_names(stack: Stack, mode: str) -> None:
    async with client(stack.profile("trio"), mode) as trio:
        tools = {tool.name for tool in (await trio.list_tools()).tools}
        assert {"alpha__test_simple_text", "beta__test_simple_text", "everything__echo"} <= tools
        assert text(await trio.call_tool("everything__echo", {"message": "hi"})) == "Echo: hi"
        before = len(stack.beta.requests("tools/call"))
        assert (
            text(await trio.call_tool("alpha__test_error_handling", {})) == "Error executing tool test_error_handling"
        )
        assert len(stack.beta.requests("tools/call")) == before  # alpha's tool reached alpha only

        # Resources: the same URI on two servers stays two resources; each reads back from its own server.
        uris = {resource.uri for resource in (await trio.list_resources()).resources}
        assert {"jarvis://alpha/test://static-text", "jarvis://beta/test://static-text"} <= uris
        assert "jarvis://everything/demo://resource/static/document/architecture.md" in uris
        reads = {server.name: len(server.requests("resources/read")) for server in (stack.alpha, stack.beta)}
        read = await trio.read_resource("jarvis://beta/test://static-text")
        assert read.contents[0].uri == "jarvis://beta/test://static-text"
        assert text(read) == "This is the content of the static text resource."
        assert stack.beta.requests("resources/read")[-1]["uri"] == "test://static-text"
        assert len(stack.alpha.requests("resources/read")) == reads["alpha"]
        everything = await trio.read_resource("jarvis://everything/demo://resource/static/document/architecture.md")
        assert everything.contents[0].uri == "jarvis://everything/demo://resource/static/document/architecture.md"

        # Templates: the namespaced template expands as the client would, and reaches the template's server.
        templates = {t.uri_template for t in (await trio.list_resource_templates()).resource_templates}
        assert {
            "jarvis://alpha/test://template/{id}/data",
            "jarvis://everything/demo://resource/dynamic/text/{resourceId}",
        } <= templates
        data = json.loads(text(await trio.read_resource("jarvis://alpha/test://template/42/data")))
        assert data["id"] == "42"
        dynamic = await trio.read_resource("jarvis://everything/demo://resource/dynamic/text/7")
        assert dynamic.contents[0].uri == "jarvis://everything/demo://resource/dynamic/text/7"

        # Prompts, and completions of prompt and template arguments, per server.
        prompts = {prompt.name for prompt in (await trio.list_prompts()).prompts}
        assert {"alpha__test_prompt_with_arguments", "beta__test_simple_prompt", "everything__args-prompt"} <= prompts
        got = await trio.get_prompt("beta__test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        assert got.messages[0].content.text == "Prompt with arguments: arg1='a', arg2='b'"  # type: ignore[union-attr]
        assert stack.beta.requests("prompts/get")[-1]["name"] == "test_prompt_with_arguments"
        args = await trio.get_prompt("everything__args-prompt", {"city": "Paris"})
        assert "Paris" in args.messages[0].content.text  # type: ignore[union-attr]
        prompt_ref = types.PromptReference(type="ref/prompt", name="alpha__test_prompt_with_arguments")
        completed = await trio.complete(prompt_ref, {"name": "arg1", "value": "par"})
        assert completed.completion.values == ["paris", "park", "party"]
        assert stack.alpha.requests("completion/complete")[-1]["ref"]["name"] == "test_prompt_with_arguments"
        template_ref = types.ResourceTemplateReference(
            type="ref/resource", uri="jarvis://beta/test://template/{id}/data"
        )
        completed = await trio.complete(template_ref, {"name": "id", "value": "pa"})
        assert completed.completion.values == ["paris", "park", "party"]
        assert stack.beta.requests("completion/complete")[-1]["ref"]["uri"] == "test://template/{id}/data"
        department = types.PromptReference(type="ref/prompt", name="everything__completable-prompt")
        assert (await trio.complete(department, {"name": "department", "value": "En"})).completion.values


@pytest.mark.parametrize("mode", MODES)
async def test_a_spawned_server_that_speaks_both_eras_is_called_in_its_sessions_era(stack: Stack, mode: str) -> None:
    """A stdio server that also speaks 2026-07-28 fixed its era at the handshake: a 2026 caller's call is bridged."""
    async with client(stack.profile("spawned"), mode) as spawned:
        assert {"alpha__test_simple_text", "gamma__test_simple_text"} <= {
            t.name for t in (await spawned.list_tools()).tools
        }
        gamma = await spawned.call_tool("gamma__test_simple_text", {})
        alpha = await spawned.call_tool("alpha__test_simple_text", {})
        assert not gamma.is_error, text(gamma)
        assert text(gamma) == text(alpha)


# ------------------------------------------------------------------ caching hints


async def test_merged_lists_carry_the_strictest_caching_hint(stack: Stack) -> None:
    expected = {"solo": (60_000, "public"), "pair": (30_000, "private"), "trio": (0, "private")}
    for profile, (ttl, scope) in expected.items():
        async with client(stack.profile(profile), MODERN) as modern:
            for listing in (modern.list_resources, modern.list_resource_templates, modern.list_prompts):
                result = await listing()
                assert result.cache_scope == scope, (profile, listing.__name__)
                # A page Jarvis reuses says the time it has left: at most the server's, less its age.
                assert _aged(ttl, result.ttl_ms), (profile, listing.__name__, result.ttl_ms)
            # A read comes from one server: its own hint, not the merged one.
            read = await modern.read_resource("jarvis://alpha/test://static-text")
            assert read.cache_scope == "public"
            assert _aged(60_000, read.ttl_ms), read.ttl_ms


def _aged(server_ttl: int, served: int | None) -> bool:
    return served == server_ttl == 0 or (served is not None and server_ttl - 10_000 < served <= server_ttl)


# ------------------------------------------------------------------ subscriptions


async def test_subscriptions_of_2025_clients_fan_out_to_the_owning_server(stack: Stack) -> None:
    uri = f"jarvis://alpha/{WATCHED}"
    heard: dict[str, list[str]] = {"one": [], "two": []}

    def hearing(who: str) -> Any:
        async def handle(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                heard[who].append(message.params.uri)

        return handle

    subscribes = len(stack.alpha.requests("resources/subscribe"))
    async with (
        client(stack.profile("pair"), LEGACY, message_handler=hearing("one")) as one,
        client(stack.profile("trio"), LEGACY, message_handler=hearing("two")) as two,
    ):
        await one.subscribe_resource(uri)
        await two.subscribe_resource(uri)
        # Two callers, one downstream subscription, on the server the URI names with the server's own URI.
        assert [e["uri"] for e in stack.alpha.requests("resources/subscribe")[subscribes:]] == [WATCHED]
        assert not [e for e in stack.beta.requests("resources/subscribe") if e["uri"] == WATCHED]
        await one.call_tool("alpha__test_touch_resource", {"uri": WATCHED})
        await _until(lambda: heard["one"] and heard["two"])
        assert heard == {"one": [uri], "two": [uri]}
        await one.unsubscribe_resource(uri)
        assert not stack.alpha.requests("resources/unsubscribe")  # two still watches
        await two.call_tool("alpha__test_touch_resource", {"uri": WATCHED})
        await _until(lambda: len(heard["two"]) == 2)
        assert heard["one"] == [uri]
        await two.unsubscribe_resource(uri)
        assert [e["uri"] for e in stack.alpha.requests("resources/unsubscribe")] == [WATCHED]


async def test_a_2026_client_listens_to_resources_of_several_servers(stack: Stack) -> None:
    watched = [f"jarvis://alpha/{WATCHED}", f"jarvis://beta/{WATCHED}"]
    servers = (stack.alpha, stack.beta)
    ended = {server.name: len(server.requests("resources/unsubscribe")) for server in servers}
    async with client(stack.profile("pair"), MODERN) as modern, modern.listen(resource_subscriptions=watched) as sub:
        assert sub.honored.resource_subscriptions == watched
        await modern.call_tool("beta__test_touch_resource", {"uri": WATCHED})
        with anyio.fail_after(15):
            event = await sub.__anext__()
        assert getattr(event, "uri", None) == f"jarvis://beta/{WATCHED}"
        await modern.call_tool("alpha__test_touch_resource", {"uri": WATCHED})
        with anyio.fail_after(15):
            event = await sub.__anext__()
        assert getattr(event, "uri", None) == f"jarvis://alpha/{WATCHED}"
    # The stream's end ends the servers' subscriptions too.
    await _until(lambda: all(len(s.requests("resources/unsubscribe")) > ended[s.name] for s in servers))


async def test_a_2026_client_hears_that_prompts_and_resources_changed(stack: Stack) -> None:
    """A listen stream acknowledged for prompts and resources list changes hears them: when a server of the profile
    says its lists changed, and when the profile gains a server (which may change all three lists)."""
    async with mcp_client(stack.jarvis.url()) as admin:
        await create_profile(admin, "growing", "gamma")
    async with client(stack.profile("growing"), MODERN) as modern:
        await modern.call_tool("gamma__test_simple_text", {})  # gamma runs: its start is not what is heard below
        async with (
            modern.listen(prompts_list_changed=True, resources_list_changed=True) as lists,
            modern.listen(tools_list_changed=True) as tools,
        ):
            assert lists.honored.prompts_list_changed
            assert lists.honored.resources_list_changed
            assert text(await modern.call_tool("gamma__test_announce_list_changes", {})) == "announced"
            assert await _kinds(lists, 2) == {PromptsListChanged, ResourcesListChanged}
            async with mcp_client(stack.jarvis.url()) as admin:
                edit = {"action": "edit", "name": "growing", "add": ["alpha"]}
                result_json(await admin.call_tool("jarvis_profile", edit))
            assert await _kinds(lists, 2) == {PromptsListChanged, ResourcesListChanged}
            assert await _kinds(tools, 1) == {ToolsListChanged}  # it asked for tools only


async def test_a_2025_session_hears_that_prompts_and_resources_changed(stack: Stack) -> None:
    """A 2025-era session that listed prompts is told of list changes on its session, as of tools: a server's own
    notice, and a server joining the profile (all three lists)."""
    heard: list[str] = []

    async def handle(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and message.method.endswith("/list_changed"):
            heard.append(message.method)

    async with mcp_client(stack.jarvis.url()) as admin:
        await create_profile(admin, "growing-2025", "gamma")
    async with client(stack.profile("growing-2025"), LEGACY, message_handler=handle) as legacy:
        capabilities = legacy.server_capabilities
        assert capabilities.prompts is not None
        assert capabilities.prompts.list_changed is True
        assert capabilities.resources is not None
        assert capabilities.resources.list_changed is True
        await legacy.list_prompts()
        await legacy.call_tool("gamma__test_announce_list_changes", {})
        await _until(lambda: len(heard) >= 2)
        assert sorted(heard) == ["notifications/prompts/list_changed", "notifications/resources/list_changed"]
        async with mcp_client(stack.jarvis.url()) as admin:
            edit = {"action": "edit", "name": "growing-2025", "add": ["alpha"]}
            result_json(await admin.call_tool("jarvis_profile", edit))
        await _until(lambda: len(heard) >= 5)
        assert sorted(heard[2:]) == [f"notifications/{kind}/list_changed" for kind in ("prompts", "resources", "tools")]


async def _kinds(subscription: Any, count: int) -> set[type]:
    """The kinds of the next `count` events of a listen stream."""
    with anyio.fail_after(15):
        return {type(await subscription.__anext__()) for _ in range(count)}


async def test_subscriptions_survive_a_restart_of_the_server(stack: Stack) -> None:
    uri = f"jarvis://beta/{WATCHED}"
    heard: list[str] = []

    async def handle(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append(message.params.uri)

    async with client(stack.profile("pair"), LEGACY, message_handler=handle) as watcher:
        await watcher.subscribe_resource(uri)
        subscribes = len(stack.beta.requests("resources/subscribe"))
        async with mcp_client(stack.jarvis.url()) as admin:
            result_json(await admin.call_tool("jarvis_profile", {"action": "restart", "name": "pair"}))
        # Jarvis's new session to beta subscribes again on its own.
        await _until(lambda: len(stack.beta.requests("resources/subscribe")) > subscribes)
        await watcher.call_tool("beta__test_touch_resource", {"uri": WATCHED})
        await _until(lambda: heard == [uri])
        await watcher.unsubscribe_resource(uri)


# ------------------------------------------------------------------ what a token grants


async def test_resources_and_prompts_need_a_grant_of_the_profile_or_of_their_server(stack: Stack) -> None:
    """A token granted single tools may call those tools; it is not handed the servers' resources and prompts."""
    grants = {
        "profile:pair": {"alpha", "beta"},
        "servers:beta": {"beta"},
        "profile:pair:alpha__test_simple_text": set(),
    }
    for scope, servers in grants.items():
        token = stack.jarvis.create_token(scope, name=scope.replace(":", "-"))
        async with client(stack.profile("pair"), MODERN, token=token) as scoped:
            listed = {r.uri.split("/")[2] for r in (await scoped.list_resources()).resources}
            assert listed == servers, scope
            assert {p.name.partition("__")[0] for p in (await scoped.list_prompts()).prompts} == servers, scope
            for server in ("alpha", "beta"):
                if server in servers:
                    await scoped.read_resource(f"jarvis://{server}/test://static-text")
                    continue
                with pytest.raises(MCPError) as refused:
                    await scoped.read_resource(f"jarvis://{server}/test://static-text")
                assert refused.value.error.code == types.INVALID_PARAMS, (scope, server)
                with pytest.raises(MCPError) as refused:
                    await scoped.get_prompt(f"{server}__test_simple_prompt")
                assert refused.value.error.code == types.INVALID_PARAMS, (scope, server)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("mode", MODES)
async def test_names_of_no_server_of_the_profile_reach_nothing(stack: Stack, mode: str) -> None:
    seen = {server.name: len(server.requests()) for server in (stack.alpha, stack.beta)}
    async with client(stack.profile("pair"), mode) as pair:
        for uri in (
            "jarvis://everything/demo://resource/static/document/architecture.md",  # installed, not in the profile
            "jarvis://nobody/test://static-text",
            "test://static-text",  # not namespaced
            "jarvis://alpha",  # no URI of the server
        ):
            with pytest.raises(MCPError) as refused:
                await pair.read_resource(uri)
            assert refused.value.error.code == types.INVALID_PARAMS, uri
        with pytest.raises(MCPError) as refused:
            await pair.get_prompt("nobody__test_simple_prompt")
        assert refused.value.error.code == types.INVALID_PARAMS
        with pytest.raises(MCPError) as refused:
            await pair.complete(
                types.ResourceTemplateReference(type="ref/resource", uri="jarvis://nobody/test://template/{id}/data"),
                {"name": "id", "value": "p"},
            )
        assert refused.value.error.code == types.INVALID_PARAMS
        with pytest.raises(MCPError) as refused:
            await pair.call_tool("nobody__test_simple_text", {})
        assert refused.value.error.code == types.INVALID_PARAMS
    # Connecting may list tools (Jarvis asks its servers for nothing new); no read, get or completion went out.
    for server in (stack.alpha, stack.beta):
        later = server.requests()[seen[server.name] :]
        assert not [e for e in later if e["method"] != "tools/list"], (server.name, later)


async def test_malformed_meta_is_refused_before_any_server(stack: Stack) -> None:
    seen = {server.name: len(server.requests()) for server in (stack.alpha, stack.beta)}
    uri = "jarvis://alpha/test://static-text"
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "resources/read",
        "Mcp-Name": uri,
    }
    client_meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    malformed: list[Any] = [
        "not an object",
        {k: v for k, v in client_meta.items() if k != "io.modelcontextprotocol/protocolVersion"},
        {**client_meta, "io.modelcontextprotocol/clientCapabilities": "none"},
    ]
    async with httpx2.AsyncClient(timeout=30) as http:
        for number, meta in enumerate(malformed):
            body = {"jsonrpc": "2.0", "id": number, "method": "resources/read", "params": {"uri": uri, "_meta": meta}}
            response = await http.post(stack.profile("pair"), json=body, headers=headers)
            error = _error_of(response)
            assert error is not None, (meta, response.status_code, response.text[:500])
            assert error["code"] in (types.INVALID_PARAMS, types.INVALID_REQUEST), (meta, error)
    for server in (stack.alpha, stack.beta):
        assert not server.requests()[seen[server.name] :], server.name


async def test_a_request_state_reaches_only_the_server_its_tool_names(stack: Stack) -> None:
    async with client(stack.profile("pair"), MODERN) as modern:
        first = await modern.session.call_tool(
            "alpha__test_input_required_result_request_state", {}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state
        state = first.request_state
        answers: dict[str, Any] = {"confirm": {"action": "accept", "content": {"ok": True}}}
        alpha_calls = len(stack.alpha.requests("tools/call"))
        # alpha's state, sent with beta's tool: it goes to beta as it is, and beta's own check refuses it.
        with pytest.raises(MCPError) as through:
            await modern.session.call_tool(
                "beta__test_input_required_result_request_state",
                {},
                request_state=state,
                input_responses=answers,
            )
        assert stack.beta.requests("tools/call")[-1]["requestState"] == state
        assert len(stack.alpha.requests("tools/call")) == alpha_calls
        # The refusal is beta's own, as a client talking to beta directly gets it.
        async with client(stack.beta.url, MODERN) as direct:
            with pytest.raises(MCPError) as directly:
                await direct.session.call_tool(
                    "test_input_required_result_request_state",
                    {},
                    request_state=state,
                    input_responses=answers,
                )
        assert through.value.error.code == directly.value.error.code
        # And the state goes back to its own server untouched: the flow completes there.
        done = await modern.session.call_tool(
            "alpha__test_input_required_result_request_state",
            {},
            request_state=state,
            input_responses=answers,
        )
        assert text(done) == "state-ok: confirmed"
        assert stack.alpha.requests("tools/call")[-1]["requestState"] == state


def _error_of(response: httpx2.Response) -> dict[str, Any] | None:
    """The JSON-RPC error of a response, JSON or SSE."""
    body = response.text
    if "text/event-stream" in response.headers.get("content-type", ""):
        body = next((line[5:].strip() for line in body.splitlines() if line.startswith("data:")), "{}")
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    return error if isinstance(error, dict) else None


async def _until(check: Any, timeout: float = 15) -> None:
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.05)
