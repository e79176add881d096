"""`code_run` on `/mcp` (issue 35) through a real `jarvis up` and the SDK's HTTP client."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.support.discovery import call, discovery_client, names
from tests.support.downstream import FAST_ENV, create_toy, eventually, text_of
from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json, start_jarvis
from tests.support.typecheck import deno_check

pytestmark = pytest.mark.anyio

TRY_BOTH = """
const listed = await tools.jarvis_config({ action: "list" });
let wrote: string;
try {
  await tools.jarvis_config({ action: "set", key: "log_level", value: "DEBUG" });
  wrote = "written";
} catch (e) {
  wrote = String(e.message);
}
return { listed: Array.isArray(listed.settings ?? listed.config ?? listed) || typeof listed === "object", wrote };
"""


async def test_a_read_tokens_program_cannot_do_what_the_read_token_cannot(secured: RunningJarvis) -> None:
    reader = secured.create_token("read", name="code-reader")
    admin = secured.create_token("admin", name="code-admin")
    async with discovery_client(secured.url("/mcp"), token=reader) as client:
        answer = await call(client, "code_run", {"code": TRY_BOTH})
    assert answer["result"]["listed"] is True
    assert answer["result"]["wrote"] != "written"
    assert "scope" in answer["result"]["wrote"] or "may" in answer["result"]["wrote"]
    # One line for the tool's two calls, the refused one's reason in it.
    [config_calls] = answer["calls"]
    assert (config_calls["name"], config_calls["count"]) == ("jarvis_config", 2)
    assert config_calls["errors"] == [answer["result"]["wrote"]]
    async with discovery_client(secured.url("/mcp"), token=admin) as client:
        audit = await call(
            client,
            "tool_call",
            {
                "name": "jarvis_server",
                "arguments": {"action": "usage", "audit": True, "query": "code-reader"},
            },
        )
        level = await call(
            client, "tool_call", {"name": "jarvis_config", "arguments": {"action": "get", "key": "log_level"}}
        )
        # The inner calls are the reader token's (its id), named with the run they came from.
        token_id = audit["audit"][0]["token_id"]
        everything = await call(
            client,
            "tool_call",
            {"name": "jarvis_server", "arguments": {"action": "usage", "audit": True, "query": token_id}},
        )
    inner = [e for e in everything["audit"] if e["token_name"].startswith("code-reader via code run ")]
    assert [(e["tool"], e["action"], e["outcome"]) for e in reversed(inner)] == [
        ("jarvis_config", "list", "ok"),
        ("jarvis_config", "set", "denied"),
    ]
    assert "DEBUG" not in str(level)


async def test_errors_give_the_line_and_column_and_jarvis_keeps_serving(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        thrown = error_text(await client.call_tool("code_run", {"code": "const a = 1;\n  throw new Error('nope')"}))
        bomb = error_text(
            await client.call_tool("code_run", {"code": "const a = []; while (true) a.push(new Array(1e6).fill(1.5));"})
        )
        # Issue 44 finding 3: typed arrays live outside the heap; the whole process is bounded.
        arrays = error_text(
            await client.call_tool(
                "code_run",
                {"code": "const k = []; for (let i = 0; i < 6; i++) k.push(new Uint8Array(100 << 20).fill(7));"},
            )
        )
        looping = error_text(await client.call_tool("code_run", {"code": "while (true) {}", "timeout": 1}))
        found = await call(
            client, "code_run", {"code": "return (await tool_find('list installed servers')).results[0].name"}
        )
    assert "nope (line 2, column 9)" in thrown
    assert "out of memory" in bomb
    assert "ran out of memory: it used more than 256 MiB" in arrays
    assert "wall time of 1 s" in looping
    assert found["result"] == "jarvis_server"
    assert [(c["name"], c["count"]) for c in found["calls"]] == [("tool_find", 1)]
    assert "errors" not in found["calls"][0]


async def typings_of(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, {**arguments, "format": "typescript"})
    assert not result.is_error, error_text(result)
    return text_of(result)


async def test_find_and_describe_give_declarations_a_program_is_written_against(
    jarvis: RunningJarvis, tmp_path: Path
) -> None:
    async with discovery_client(jarvis.url("/mcp")) as client:
        found = await typings_of(client, "tool_find", {"query": "list installed servers", "limit": 2})
        plain = await call(client, "tool_find", {"query": "list installed servers", "limit": 2})
        # The catalog lists filesystem servers nobody installed here.
        catalog = await typings_of(client, "tool_find", {"query": "list directory files", "limit": 10})
        described = await typings_of(client, "tool_describe", {"name": "jarvis_config"})
        program = "const c = await tools.jarvis_config({ action: 'list' });\nreturn typeof c;"
        ran = await call(client, "code_run", {"code": program})
    # A declarations file, not JSON holding quoted TypeScript.
    assert found.startswith('// 1 of 2 tools found for "list installed servers" can be called in code_run: ')
    assert "\ndeclare const tools: {\n/** " in found
    assert "\njarvis_server(args?: {\n  action?: " in found
    assert plain["results"][0]["name"] == "jarvis_server"  # without format, the same answer as JSON
    # A tool no program can call yet (in the catalog, not installed) is named under why, not declared.
    why = "// Cannot be called yet, not installed: an admin installs it with jarvis_server action=install name="
    assert why in catalog
    assert "//   filesystem__list_directory: " in catalog
    assert "filesystem__list_directory(args" not in catalog
    assert described.startswith("// call it in code_run: await tools.jarvis_config(args)\n")
    assert "jarvis_config(args?: {" in described
    assert ran["result"] == "object"
    # What was found is valid TypeScript that a program is checked against: a right call passes, a wrong one fails.
    checked = deno_check(tmp_path, found, "await tools.jarvis_server({ action: 'list' });")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    wrong = deno_check(tmp_path, described, "await tools.jarvis_config({ action: 'delete' });")
    assert wrong.returncode != 0
    assert "delete" in wrong.stdout + wrong.stderr


async def test_the_readmes_worked_example_checks_and_runs_as_shown(jarvis: RunningJarvis, tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    program = textwrap.dedent(readme.split('code_run(code="""\n', 1)[1].split('""")', 1)[0])
    async with discovery_client(jarvis.url("/mcp")) as client:
        described = await typings_of(client, "tool_describe", {"name": "jarvis_config"})
        ran = await call(client, "code_run", {"code": program})
        listed = await call(client, "tool_call", {"name": "jarvis_config", "arguments": {"action": "list"}})
    checked = deno_check(tmp_path, described, program)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert ran["result"] == {
        "changed": [c["key"] for c in listed["config"] if not c["default"]],
        "total": len(listed["config"]),
    }
    assert [(c["name"], c["count"]) for c in ran["calls"]] == [("jarvis_config", 1)]


ROLES = {"read": {"enabled": False}, "jarvis": {"calls": 3}}


@pytest.fixture(scope="module")
def with_roles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """A Jarvis whose code mode is off for `read` and held to three calls a run for `jarvis`, with a bucket of two
    calls of jarvis_server per token."""
    limits = {"jarvis_server": {"per_second": 0.001, "burst": 2}}
    env = {
        "HOME": str(tmp_path_factory.mktemp("home")),
        "JARVIS_AGGREGATOR_CODE_MODE_ROLES": json.dumps(ROLES),
        "JARVIS_AGGREGATOR_RATE_LIMIT_TOOLS": json.dumps(limits),
    }
    running = start_jarvis(tmp_path_factory.mktemp("code-roles"), "--require-auth", env=env)
    yield running
    running.stop()


async def test_code_run_is_off_for_a_role_and_limited_for_another(with_roles: RunningJarvis) -> None:
    reader = with_roles.create_token("read", name="reader")
    operator = with_roles.create_token("jarvis", name="operator")
    async with discovery_client(with_roles.url("/mcp"), token=reader) as client:
        off = error_text(await client.call_tool("code_run", {"code": "return 1"}))
    async with discovery_client(with_roles.url("/mcp"), token=operator) as client:
        four = "for (let i = 0; i < 4; i++) await tools.jarvis_config({ action: 'list' });"
        limited = error_text(await client.call_tool("code_run", {"code": four}))
        three = await call(client, "code_run", {"code": four.replace("4", "3") + " return 'ok'"})
        # The token's bucket for jarvis_server holds two calls: the program's third is refused, as a third
        # direct tool_call would be.
        servers = "const r = []; for (let i = 0; i < 3; i++) r.push(await tools.jarvis_server({ action: 'list' })"
        servers += ".then(() => 'ok', (e) => String(e.message))); return r;"
        limited_calls = await call(client, "code_run", {"code": servers})
        direct = await client.call_tool("tool_call", {"name": "jarvis_server", "arguments": {"action": "list"}})
    assert "code_run is turned off for your token" in off
    assert "more than 3 tool calls" in limited
    assert three["result"] == "ok"
    assert limited_calls["result"][:2] == ["ok", "ok"]
    assert "rate limited" in limited_calls["result"][2]
    assert "rate limited" in error_text(direct)


async def test_a_role_turned_off_holds_for_narrower_scopes_and_scopes_that_call_nothing(
    with_roles: RunningJarvis,
) -> None:
    """Issue 44 finding 7: with code mode off for `read`, a token of `read@<project>`, of `jarvis:read`, or of
    `read` and `metrics` (which calls no tool) ran programs. Each is within `read` in the scope lattice."""
    around = {
        "bound": with_roles.create_token("read@p1a2b3c4d5", name="read-bound"),
        "surface-read": with_roles.create_token("jarvis:read", name="jarvis-read"),
        "plus-metrics": with_roles.create_token("read", "metrics", name="read-metrics"),
    }
    # A scope outside every role turned off still counts: scopes add up, as everywhere in Jarvis.
    both = with_roles.create_token("read", "jarvis", name="read-jarvis")
    refused, listed = {}, {}
    for what, token in around.items():
        async with discovery_client(with_roles.url("/mcp"), token=token) as client:
            listed[what] = await names(client)
            refused[what] = error_text(await client.call_tool("code_run", {"code": "return 1"}))
    async with discovery_client(with_roles.url("/mcp"), token=both) as client:
        ran = await call(client, "code_run", {"code": "return 1"})
        both_listed = await names(client)
    assert {what: "code_run is turned off for your token" in text for what, text in refused.items()} == dict.fromkeys(
        around, True
    ), refused
    assert {what: "code_run" in names_ for what, names_ in listed.items()} == dict.fromkeys(around, False)
    assert ran["result"] == 1
    assert "code_run" in both_listed


async def test_share_and_metrics_tokens_cannot_run_code(secured: RunningJarvis) -> None:
    """Issue 44 finding 4: a share's token (good at its share only) and a `metrics` token (good for /metrics only)
    could run programs on /mcp, burning the host's CPU, though neither may call a single tool there."""
    admin = secured.create_token("admin", name="share-admin")
    async with mcp_client(secured.url(), admin) as jarvis:
        await create_toy(jarvis, "shared-toy")
        started = result_json(await jarvis.call_tool("jarvis_share", {"action": "start", "name": "shared-toy"}))
    tokens = {"share": started["started"]["token"], "metrics": secured.create_token("metrics", name="scraper")}
    refused, listed = {}, {}
    for what, token in tokens.items():
        async with discovery_client(secured.url("/mcp"), token=token) as client:
            listed[what] = await names(client)
            burn = {"code": "while (true) {}", "timeout": 5}
            refused[what] = error_text(await client.call_tool("code_run", burn))
    assert {what: "code_run" in names_ for what, names_ in listed.items()} == {"share": False, "metrics": False}
    for text in refused.values():
        assert "code_run runs a program that calls tools, and your token's scopes" in text, text
        assert "allow calling none; a token with a scope that reaches a tool may, e.g. 'read'" in text


async def test_tool_find_in_a_program_takes_the_arguments_tool_find_takes(jarvis: RunningJarvis) -> None:
    """Issue 44 finding 6: `tool_find('server', 100000)` in a program answered 1,659 tools, where the same call of
    tool_find is refused (at most 50): a program's call is checked by the very schema a direct call is."""
    program = "return await tool_find('server', 100000).then((f) => f.count, (e) => String(e.message));"
    async with discovery_client(jarvis.url("/mcp")) as client:
        direct = error_text(await client.call_tool("tool_find", {"query": "server", "limit": 100000}))
        inner = await call(client, "code_run", {"code": program})
        within = await call(client, "code_run", {"code": "return (await tool_find('server', 3)).count"})
    assert "maximum of 50" in direct
    assert inner["result"] == direct
    assert within["result"] == 3


async def test_a_caller_that_asks_for_progress_hears_of_each_inner_call(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Progress needs an SSE answer: with JSON answers (the default, json_response) there is no stream for it."""
    env = {"HOME": str(tmp_path_factory.mktemp("home")), "JARVIS_AGGREGATOR_JSON_RESPONSE": "false"}
    jarvis = start_jarvis(tmp_path_factory.mktemp("code-progress"), env=env)
    heard: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, message))

    code = "await tools.jarvis_config({ action: 'list' });\ntry { await tools.no_such_tool({}) } catch {}\nreturn 1"
    try:
        async with discovery_client(jarvis.url("/mcp")) as client:
            result = await client.call_tool("code_run", {"code": code}, progress_callback=on_progress)
            quiet = await call(client, "code_run", {"code": code})
    finally:
        jarvis.stop()
    assert not result.is_error
    assert heard == [(1, "jarvis_config: ok"), (2, "no_such_tool: error")]
    assert quiet["result"] == 1


async def test_inner_calls_count_against_the_tools_calls_in_flight(tmp_path_factory: pytest.TempPathFactory) -> None:
    """With one call of `sleepy__slow` in flight allowed per token, a program's two calls at once get one answer and
    one refusal, as two direct tool_calls at once would."""
    env = {
        "HOME": str(tmp_path_factory.mktemp("home")),
        "JARVIS_AGGREGATOR_RATE_LIMIT_TOOLS": json.dumps({"sleepy__slow": {"concurrent": 1}}),
        **FAST_ENV,
    }
    running = start_jarvis(tmp_path_factory.mktemp("code-in-flight"), "--require-auth", env=env)
    try:
        admin = running.create_token("admin", name="code-admin")
        async with mcp_client(running.url(), admin) as jarvis:
            await create_toy(jarvis, "sleepy")
        both = (
            "const slow = () => tools.sleepy__slow({ seconds: 1 }).then(() => 'ok', (e) => String(e.message));\n"
            "return await Promise.all([slow(), slow()]);"
        )
        async with discovery_client(running.url("/mcp"), token=admin) as client:

            async def started() -> bool:
                echo = {"name": "sleepy__echo", "arguments": {"text": "started"}}
                return not (await client.call_tool("tool_call", echo)).is_error

            await eventually(started, what="sleepy's tools callable through discovery")
            answers = (await call(client, "code_run", {"code": both}))["result"]
    finally:
        running.stop()
    assert sorted(answers)[0] == "ok"
    assert "already has 1 calls of sleepy__slow running" in sorted(answers)[1]
