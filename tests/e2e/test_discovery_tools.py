"""The default surface (`/mcp`, spec 003) through a real `jarvis up` and the SDK's HTTP client."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from tests.support.discovery import DISCOVERY_TOOLS, Recorder, call, discovery_client, listing_bytes, names
from tests.support.downstream import eventually
from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json

pytestmark = pytest.mark.anyio


async def test_six_tools_under_500_tokens_always_loaded_and_list_changed_advertised(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        listed = await client.list_tools()
        capabilities = client.server_capabilities
    assert [t.name for t in listed.tools] == DISCOVERY_TOOLS
    assert listing_bytes(listed) / 4 < 500, listing_bytes(listed)
    # Never deferred behind a client's own tool search (Claude Code's; tests/e2e/test_code_mode_claude.py).
    assert all(t.meta == {"anthropic/alwaysLoad": True} for t in listed.tools), [t.meta for t in listed.tools]
    assert capabilities.tools is not None
    assert capabilities.tools.list_changed is True


async def test_jarvis_surface_is_not_swallowed_by_the_default_path(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp/jarvis")) as client:
        assert "jarvis_server" in await names(client)


async def test_find_ranks_with_scores_active_flags_category_keywords(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        found = await call(client, "tool_find", {"query": "list installed servers", "limit": 3})
        assert found["count"] == len(found["results"]) <= 3
        top = found["results"][0]
        assert top["name"] == "jarvis_server"
        assert top["category"] == "jarvis"
        assert "install" in top["keywords"]
        assert top["active"] is False
        assert top["callable"] is True
        scores = [r["score"] for r in found["results"]]
        assert scores == sorted(scores, reverse=True)
        assert scores[0] > 0
        await call(client, "tool_load", {"names": ["jarvis_server"]})
        again = await call(client, "tool_find", {"query": "list installed servers", "limit": 3})
        assert again["results"][0]["active"] is True


async def test_find_limit_returns_the_best_first(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        many = await call(client, "tool_find", {"query": "file directory read write", "limit": 10})
        few = await call(client, "tool_find", {"query": "file directory read write", "limit": 2})
    assert len(few["results"]) == 2
    assert [r["name"] for r in few["results"]] == [r["name"] for r in many["results"][:2]]


async def test_find_reaches_catalog_tools_with_how_to_install(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        found = await call(client, "tool_find", {"query": "readTextFile", "limit": 5})
    hit = next(r for r in found["results"] if r["name"] == "filesystem__read_text_file")
    assert hit["callable"] is False
    assert "jarvis_server action=install name=filesystem" in hit["install_hint"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"query": ""}, "tool_find needs a query"),
        ({"query": "   "}, "tool_find needs a query"),
        ({}, "tool_find needs a query"),
        ({"query": "x" * 5000}, "keep it under 500"),
        ({"query": "the of and"}, "no searchable words"),
        ({"query": "servers", "limit": 0}, "limit"),
        ({"query": "servers", "limit": 10**9}, "limit"),
        ({"query": "servers", "limit": "ten"}, "limit"),
        ({"query": ["a"]}, "query"),
        ({"query": "servers", "extra": 1}, "accepted parameters"),
    ],
)
async def test_find_rejects_bad_input_precisely(
    jarvis: RunningJarvis, arguments: dict[str, object], expected: str
) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        message = error_text(await client.call_tool("tool_find", arguments))
    assert expected in message
    assert len(message) < 400  # never echoes a huge input back


async def test_find_with_no_match_says_so(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        found = await call(client, "tool_find", {"query": "zzqxv wqpfz"})
    assert found["results"] == []
    assert "no tool matches" in found["message"]


async def test_describe_a_tool_and_unknown_or_renamed_names(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        described = await call(client, "tool_describe", {"name": "jarvis_profile"})
        unknown = error_text(await client.call_tool("tool_describe", {"name": "no_such_tool"}))
        renamed = error_text(await client.call_tool("tool_describe", {"name": "jarvis_server_list"}))
        legacy = error_text(await client.call_tool("tool_describe", {"name": "go_ent_jarvis_server"}))
        missing = error_text(await client.call_tool("tool_describe", {}))
    assert described["name"] == "jarvis_profile"
    assert described["active"] is False
    assert described["input_schema"]["properties"]["action"]["enum"][0] == "list"
    assert described["category"] == "jarvis"
    assert "create" in described["keywords"]
    assert described["description"]
    assert "not found" in unknown
    assert "tool_find" in unknown
    assert "not found" in renamed
    assert "'jarvis_server'" in renamed
    assert 'action="list"' in renamed
    assert "not found" in legacy
    assert "jarvis_server" in legacy
    assert "needs 'name'" in missing


async def test_active_with_nothing_loaded(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        active = await call(client, "tool_active")
    assert active["active"] == []
    assert active["count"] == 0
    assert "no tools are active" in active["message"]


async def test_load_notifies_changes_tools_list_and_is_idempotent(jarvis: RunningJarvis) -> None:
    recorder = Recorder()
    async with discovery_client(jarvis.url("/mcp"), recorder=recorder) as client:
        loaded = await call(client, "tool_load", {"names": ["jarvis_profile", "jarvis_config"]})
        assert loaded["loaded"] == ["jarvis_profile", "jarvis_config"]
        assert loaded["active_count"] == 2
        assert await names(client) == [*DISCOVERY_TOOLS, "jarvis_profile", "jarvis_config"]
        again = await call(client, "tool_load", {"names": ["jarvis_config"]})
        assert again["loaded"] == []
        assert again["already_active"] == ["jarvis_config"]
        assert again["active_count"] == 2
        active = await call(client, "tool_active")
        profiles = await call(client, "jarvis_profile", {"action": "list"})
        await _wait_for(lambda: recorder.tool_list_changes() >= 1)
    assert [a["name"] for a in active["active"]] == ["jarvis_profile", "jarvis_config"]
    assert active["count"] == 2
    assert "profiles" in profiles
    assert recorder.tool_list_changes() == 1  # the idempotent second load changed nothing


async def test_failed_load_changes_nothing(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        await call(client, "tool_load", {"names": ["jarvis_config"]})
        unknown = error_text(await client.call_tool("tool_load", {"names": ["jarvis_profile", "nope_tool"]}))
        uncallable = error_text(await client.call_tool("tool_load", {"names": ["filesystem__read_text_file"]}))
        empty = error_text(await client.call_tool("tool_load", {"names": []}))
        wrong_type = error_text(await client.call_tool("tool_load", {"names": "jarvis_profile"}))
        active = await call(client, "tool_active")
        listed = await names(client)
    assert "nothing was loaded" in unknown
    assert "'nope_tool' not found" in unknown
    assert "tool_find" in unknown
    assert "install name=filesystem" in uncallable
    assert "needs 'names'" in empty
    assert "names" in wrong_type
    assert [a["name"] for a in active["active"]] == ["jarvis_config"]
    assert listed == [*DISCOVERY_TOOLS, "jarvis_config"]


async def test_call_any_catalogued_tool_with_precise_errors(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        profiles = await call(client, "tool_call", {"name": "jarvis_profile", "arguments": {"action": "list"}})
        no_action = error_text(await client.call_tool("tool_call", {"name": "jarvis_profile", "arguments": {}}))
        bad_action = error_text(
            await client.call_tool("tool_call", {"name": "jarvis_profile", "arguments": {"action": "explode"}})
        )
        bad_param = error_text(
            await client.call_tool("tool_call", {"name": "jarvis_profile", "arguments": {"action": "list", "bogus": 1}})
        )
        not_object = error_text(await client.call_tool("tool_call", {"name": "jarvis_profile", "arguments": "x"}))
        unknown = error_text(await client.call_tool("tool_call", {"name": "nope_tool", "arguments": {}}))
        uninstalled = error_text(await client.call_tool("tool_call", {"name": "filesystem__read_text_file"}))
        renamed = error_text(await client.call_tool("tool_call", {"name": "jarvis_profile_list"}))
        active = await call(client, "tool_active")
    assert "profiles" in profiles
    assert no_action == "action parameter is required"
    assert "unknown action 'explode' for jarvis_profile tool" in bad_action
    assert "accepted parameters" in bad_param
    assert "arguments" in not_object
    assert "object" in not_object
    assert "not found" in unknown
    assert "tool_find" in unknown
    assert "cannot be called" in uninstalled
    assert "install name=filesystem" in uninstalled
    assert "renamed" in renamed
    assert "jarvis_profile" in renamed
    assert active["count"] == 0  # calling never loads


async def test_calling_a_tool_by_name_without_loading_it(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        not_loaded = error_text(await client.call_tool("jarvis_profile", {"action": "list"}))
        renamed = error_text(await client.call_tool("jarvis_profile_list", {}))
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("nope_tool", {})
    assert "not loaded" in not_loaded
    assert "tool_load" in not_loaded
    assert "tool_call" in not_loaded
    assert "renamed" in renamed
    assert "tool_find" in str(unknown.value)


async def _wait_for(condition: object, timeout: float = 5.0) -> None:
    import anyio

    with anyio.fail_after(timeout):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(0.05)


async def test_find_honours_the_configured_default_limit(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as admin, discovery_client(jarvis.url("/mcp")) as client:
        result_json(
            await admin.call_tool("jarvis_config", {"action": "set", "key": "discovery.default_limit", "value": 3})
        )
        try:

            async def three() -> bool:
                return len((await call(client, "tool_find", {"query": "server profile token file"}))["results"]) == 3

            await eventually(three, what="tool_find answering 3 results")
            assert len((await call(client, "tool_find", {"query": "server profile", "limit": 7}))["results"]) == 7
        finally:
            result_json(
                await admin.call_tool("jarvis_config", {"action": "set", "key": "discovery.default_limit", "value": 5})
            )


async def test_debug_gateway_tools_are_found_with_their_exact_call(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:

        async def indexed() -> bool:
            found = (await call(client, "tool_find", {"query": "cloudwatch", "limit": 10}))["results"]
            return any(r["name"].startswith("debug__cloudwatch") for r in found)

        await eventually(indexed, what="the debug gateway's tools in tool_find")
        found = (await call(client, "tool_find", {"query": "show cloudwatch logs for a lambda"}))["results"]
        jira = (await call(client, "tool_find", {"query": "search jira issues with jql"}))["results"]
        described = await call(client, "tool_describe", {"name": jira[0]["name"]})
        # Through tool_call, a sub-tool runs as the debug gateway runs it: Jira is not configured here.
        ran = error_text(
            await client.call_tool("tool_call", {"name": jira[0]["name"], "arguments": {"jql": "project = PAY"}})
        )
    assert found[0]["name"].startswith("debug__cloudwatch"), found[:3]
    assert found[0]["call"].startswith(f'debug(tool="{found[0]["name"].removeprefix("debug__")}"')
    assert jira[0]["name"] == "debug__jira_search", jira[:3]
    assert jira[0]["call"].startswith('debug(tool="jira_search", arguments=')
    assert "jql" in described["input_schema"]["properties"]
    assert 'debug(tool="jira_search"' in described["call"]
    assert "JIRA" in ran


async def test_status_says_how_tool_find_ranks(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as admin:

        async def hybrid() -> bool:
            status = result_json(await admin.call_tool("jarvis_check_status", {}))
            return bool(status["discovery"]["search"] == "hybrid")

        await eventually(hybrid, what="hybrid search in jarvis_check_status", timeout=120)
        status = result_json(await admin.call_tool("jarvis_check_status", {}))["discovery"]
    assert status["model"] == "ready"
    assert status["embedded"] == status["tools"] > 30
