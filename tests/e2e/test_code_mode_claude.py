"""Code mode as a real agent does it (issue 35): Claude Code, the real CLI, with Jarvis's `/mcp` as its MCP server,
asks `tool_find` for declarations, writes a program against them and hands it to `code_run`; then a program the
sandbox refuses. Its model is a scripted fake of the Anthropic Messages API on loopback, which records what the
agent sends back: what a model would read.

Claude Code runs with its defaults, its own tool search on: it defers an MCP server's tools behind that search
unless the server lists them as always loaded, as Jarvis lists `/mcp`'s, so the model is offered them directly.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.agent_clients import client_env
from tests.support.anthropic_fake import FINAL, ScriptedToolsFake
from tests.support.discovery import DISCOVERY_TOOLS, call, discovery_client, model_definitions
from tests.support.http_fake import serve_app
from tests.support.stack import RunningJarvis
from tests.support.typecheck import deno_check

pytestmark = pytest.mark.anyio

# What a model writes against `Promise<unknown>`: it says what it expects the result to be.
PROGRAM = """const listed = (await tools.jarvis_config({ action: "list" })) as { config: unknown[] };
const level = await tools.jarvis_config({ action: "get", key: "log_level" });
return { settings: listed.config.length, level };"""
REFUSED = "return await Deno.readTextFile('/etc/passwd');"


def run_claude(jarvis: RunningJarvis, fake: ScriptedToolsFake, home: Path) -> subprocess.CompletedProcess[str]:
    with serve_app(fake.app()) as model_url:
        env = {
            **client_env(home),
            "ANTHROPIC_API_KEY": "sk-ant-code-mode-test",
            "ANTHROPIC_BASE_URL": model_url,
        }
        config = {"mcpServers": {"jarvis": {"type": "http", "url": jarvis.url("/mcp")}}}
        allowed = ",".join(name for name, _ in fake.calls)
        command = ["claude", "-p", "How many settings has Jarvis, and its log level?", "--output-format", "json"]
        command += ["--mcp-config", json.dumps(config), "--strict-mcp-config", "--allowedTools", allowed]
        return subprocess.run(command, cwd=home, env=env, capture_output=True, text=True, timeout=180, check=False)


async def test_claude_code_finds_declarations_runs_a_program_and_hears_a_refusal(
    jarvis: RunningJarvis, tmp_path: Path
) -> None:
    fake = ScriptedToolsFake(
        [
            ("mcp__jarvis__tool_find", {"query": "read settings config", "limit": 2, "format": "typescript"}),
            ("mcp__jarvis__code_run", {"code": PROGRAM}),
            ("mcp__jarvis__code_run", {"code": REFUSED}),
        ]
    )
    done = run_claude(jarvis, fake, tmp_path)
    assert done.returncode == 0, f"claude exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert json.loads(done.stdout)["result"] == FINAL
    # Offered to the model up front, not deferred behind Claude Code's own tool search, and as the code-mode
    # benchmark counts them: name, description and input schema, nothing else of the listing.
    offered = {tool["name"]: tool for request in fake.requests for tool in request.body.get("tools", [])}
    async with discovery_client(jarvis.url("/mcp")) as client:
        surface = await client.list_tools()
    for definition in model_definitions(surface):
        assert offered.get(f"mcp__jarvis__{definition['name']}") == {
            **definition,
            "name": f"mcp__jarvis__{definition['name']}",
        }, sorted(offered)
    assert [d["name"] for d in model_definitions(surface)] == DISCOVERY_TOOLS
    found, ran, refused = fake.results()

    # The model read a declarations file, and the program it wrote type-checks against it.
    assert not found.is_error
    assert "declare const tools: {" in found.text, found.text
    assert "jarvis_config(args" in found.text
    checked = deno_check(tmp_path, found.text, PROGRAM)
    assert checked.returncode == 0, checked.stderr
    assert deno_check(tmp_path, found.text, 'await tools.jarvis_config({ action: "erase" });').returncode != 0

    # The run's answer is what the same calls give directly, with one line for the tool's two calls.
    async with discovery_client(jarvis.url("/mcp")) as client:
        listed = await call(client, "tool_call", {"name": "jarvis_config", "arguments": {"action": "list"}})
        level = await call(
            client, "tool_call", {"name": "jarvis_config", "arguments": {"action": "get", "key": "log_level"}}
        )
    answer = json.loads(ran.text)
    assert not ran.is_error
    assert answer["result"] == {"settings": len(listed["config"]), "level": level}
    assert [(c["name"], c["count"]) for c in answer["calls"]] == [("jarvis_config", 2)]

    # A program that reaches for the file system ends with a clear error the model reads, not a crash.
    assert refused.is_error
    assert "Deno is not defined" in refused.text, refused.text
    assert "root:" not in refused.text
