"""The debug gateway's configuration as people meet it: missing credentials, adding them without a
restart, the removed DEBUG_MCP_TOOLS filter, secrets kept out of logs, stdio and distributed mode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextContent

from tests.support.aws_fake import SECRET_KEY, FakeAws
from tests.support.debug_fixtures import saas_env, write_credentials
from tests.support.saas_fakes import JIRA_TOKEN, LANGSMITH_KEY
from tests.support.stack import REPO, RunningJarvis, error_text, free_port, mcp_client, result_json, wait_for_url

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("tool", "arguments", "instructions"),
    [
        (
            "cloudwatch_list_log_groups",
            "{}",
            [
                "AWS credentials not found",
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_PROFILE",
                "~/.aws/credentials",
                "debug.env",
            ],
        ),
        ("stepfunctions_list_state_machines", "{}", ["AWS credentials not found", "AWS_ACCESS_KEY_ID"]),
        (
            "langsmith_list_projects",
            "{}",
            ["LangSmith is not configured: set LANGSMITH_API_KEY", "LANGSMITH_ENDPOINT", "debug.env"],
        ),
        (
            "jira_search",
            '{"jql": "project = PAY"}',
            ["Jira is not configured: set JIRA_URL, JIRA_EMAIL, JIRA_API_TOKEN", "debug.env", "api-tokens"],
        ),
    ],
)
async def test_missing_credentials_return_configuration_instructions(
    bare: RunningJarvis, tool: str, arguments: str, instructions: list[str]
) -> None:
    async with mcp_client(bare.url("/mcp/debug")) as client:
        text = error_text(await client.call_tool("debug", {"tool": tool, "arguments": arguments}))
    assert text.startswith(f"debug tool {tool}: ")
    for fragment in instructions:
        assert fragment in text, (fragment, text)


async def test_credentials_added_to_the_data_dir_work_without_a_restart(
    bare: RunningJarvis, langsmith_url: str, jira_url: str
) -> None:
    env_file = bare.data_dir / "debug.env"
    async with mcp_client(bare.url("/mcp/debug")) as client:
        before = await client.call_tool("debug", {"tool": "jira_get_issue", "arguments": '{"key": "PAY-42"}'})
        assert str(env_file) in error_text(before)
        write_credentials(env_file, **saas_env(langsmith_url, jira_url))
        try:
            after = result_json(
                await client.call_tool("debug", {"tool": "jira_get_issue", "arguments": '{"key": "PAY-42"}'})
            )
        finally:
            env_file.unlink()
    assert after["summary"] == "Checkout fails when the card is expired"


async def test_debug_mcp_tools_is_not_read(configured: RunningJarvis) -> None:
    # `configured` runs with DEBUG_MCP_TOOLS=describe_log_groups; every category and tool is still there.
    async with mcp_client(configured.url("/mcp/debug")) as client:
        listing = result_json(await client.call_tool("debug", {"tool": "list"}))
    assert sum(len(c["tools"]) for c in listing["categories"]) >= 17
    sources = [*(REPO / "services" / "debug").rglob("*.py"), *(REPO / "aggregator").rglob("*.py")]
    assert not [p for p in sources if "DEBUG_MCP_TOOLS" in p.read_text()]


async def test_secrets_stay_out_of_answers_and_logs(configured: RunningJarvis, aws: FakeAws) -> None:
    async with mcp_client(configured.url("/mcp/debug")) as client:
        answers = [
            await client.call_tool("debug", {"tool": "cloudwatch_list_log_groups"}),
            await client.call_tool("debug", {"tool": "langsmith_list_projects"}),
            await client.call_tool("debug", {"tool": "jira_get_issue", "arguments": '{"key": "PAY-404"}'}),
        ]
    texts: list[str] = []
    for answer in answers:
        block = answer.content[0]
        assert isinstance(block, TextContent), block
        texts.append(block.text)
    texts.append(configured.log())
    assert "debug tool called" in configured.log()  # calls are logged, by tool name and outcome only
    for secret in (SECRET_KEY, LANGSMITH_KEY, JIRA_TOKEN):
        assert not [t for t in texts if secret in t]


async def test_status_reports_the_debug_service(configured: RunningJarvis) -> None:
    async with mcp_client(configured.url()) as client:
        status = result_json(await client.call_tool("jarvis_check_status", {}))
    assert status["services"]["debug"]["ok"] is True
    assert "/mcp/debug" in status["aggregator"]["surfaces"]


async def test_stdio_debug_surface(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jarvis.cli", "--data-dir", str(tmp_path / "data"), "mcp", "--surface", "debug"],
        env={**os.environ, "HOME": str(tmp_path), "JARVIS_LOG_LEVEL": "WARNING"},
    )
    async with Client(params, mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["debug"]
        listing = result_json(await client.call_tool("debug", {}))
        assert "jira" in {c["category"] for c in listing["categories"]}


async def test_distributed_mode_serves_debug_as_its_own_process(
    tmp_path: Path, jira_url: str, langsmith_url: str
) -> None:
    registry_port, debug_port, aggregator_port = free_port(), free_port(), free_port()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JARVIS_LOG_LEVEL": "WARNING",
        **saas_env(langsmith_url, jira_url),
        "JARVIS_REGISTRY_DATA_DIR": str(tmp_path),
        "JARVIS_REGISTRY_LISTEN": f"127.0.0.1:{registry_port}",
        "JARVIS_DEBUG_LISTEN": f"127.0.0.1:{debug_port}",
        "JARVIS_AGGREGATOR_PORT": str(aggregator_port),
        "JARVIS_AGGREGATOR_REGISTRY_TARGET": f"127.0.0.1:{registry_port}",
        "JARVIS_AGGREGATOR_DEBUG_TARGET": f"127.0.0.1:{debug_port}",
    }
    processes = [
        subprocess.Popen([sys.executable, "-m", "jarvis.cli", "serve", service], env=env)
        for service in ("registry", "debug", "aggregator")
    ]
    try:
        wait_for_url(f"http://127.0.0.1:{aggregator_port}/healthz")
        async with mcp_client(f"http://127.0.0.1:{aggregator_port}/mcp/debug") as client:
            issue = result_json(
                await client.call_tool("debug", {"tool": "jira_get_issue", "arguments": '{"key": "PAY-42"}'})
            )
        assert issue["status"] == "In Progress"
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            assert process.wait(15) in (0, -signal.SIGTERM)
