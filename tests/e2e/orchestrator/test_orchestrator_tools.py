"""The `orchestrator` surface's tool list, spec 001's exact errors, renamed tools and the pending scheduler."""

from __future__ import annotations

import json

import pytest

from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json

pytestmark = pytest.mark.anyio

URL = "/mcp/orchestrator"
EXPECTED = {
    "project": ["create", "list", "get", "delete", "secret_set", "secret_list", "secret_delete"],
    "container": ["start", "stop", "logs", "exec"],
    "session": ["spawn", "message", "get", "list", "end", "events", "cleanup"],
    "workspace": ["list", "delete"],
    "token": ["create", "list", "revoke"],
    "schedule": ["create", "list", "get", "update", "delete", "trigger"],
    "project_options": [],
    "project_changes": [],
    "project_tasks": [],
    "image_rebuild": [],
    "caller_tool_response": [],
    "config_limits": [],
}
# Spec 001's 12 tools with their parameter schemas and annotations, to the local admin too: `user` and `role` are
# on /mcp/admin (decision 0069); about 6.0 kB (~1.5k tokens) since projects gained agent presets and secrets (5.3 kB
# before).
BUDGET_BYTES = 6500


async def test_tools_are_the_spec_set_within_budget(orchestrator: RunningJarvis) -> None:
    async with mcp_client(orchestrator.url(URL)) as client:
        listed = await client.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert sorted(tools) == sorted(EXPECTED)
    assert len(tools) == 12
    for name, actions in EXPECTED.items():
        description = tools[name].description or ""
        assert len(description) <= 60, name
        assert all(a in description for a in actions), (name, description)
        if actions:
            assert tools[name].input_schema["properties"]["action"]["enum"] == actions
    compact = json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
    assert len(compact.encode()) < BUDGET_BYTES, len(compact.encode())
    annotations = {n: t.annotations for n, t in tools.items()}
    assert annotations["config_limits"].read_only_hint is True  # type: ignore[union-attr]
    assert annotations["project"].destructive_hint is True  # type: ignore[union-attr]
    assert annotations["container"].read_only_hint is False  # type: ignore[union-attr]


async def test_action_errors_use_the_spec_texts(orchestrator: RunningJarvis) -> None:
    async with mcp_client(orchestrator.url(URL)) as client:
        invalid = await client.call_tool("project", {"action": "invalid"})
        missing = await client.call_tool("project", {})
        session_missing = await client.call_tool("session", {"action": "get", "project_id": "p0123456789ab"})
    assert error_text(invalid) == (
        "unknown action 'invalid' for project tool; valid actions: create, list, get, "
        "delete, secret_set, secret_list, secret_delete"
    )
    assert error_text(missing) == "action parameter is required"
    assert error_text(session_missing) == "session action=get requires 'session_id'"


async def test_old_names_point_to_the_new_tool_and_action(orchestrator: RunningJarvis) -> None:
    async with mcp_client(orchestrator.url(URL)) as client:
        answers = {
            old: error_text(await client.call_tool(old, {}))
            for old in (
                "project_create",
                "container_exec",
                "session_spawn",
                "workspace_delete",
                "token_revoke",
                "schedule_trigger",
            )
        }
    assert answers["project_create"] == (
        "tool 'project_create' not found: it was renamed; call 'project' with "
        'action="create" (on the orchestrator surface)'
    )
    for old, text in answers.items():
        tool, _, action = old.partition("_")
        assert f"call '{tool}' with action=\"{action}\"" in text


async def test_status_reports_the_runtime_and_limits(orchestrator: RunningJarvis) -> None:
    async with mcp_client(orchestrator.url("/mcp/jarvis")) as client:
        status = result_json(await client.call_tool("jarvis_check_status", {}))
    assert status["services"]["runtime"]["ok"] is True
    assert status["services"]["runtime"]["detail"] == "SERVING"
    async with mcp_client(orchestrator.url(URL)) as client:
        limits = result_json(await client.call_tool("config_limits", {}))
        options = result_json(await client.call_tool("project_options", {}))
    assert limits["cap_drop"] == ["ALL"]
    assert limits["read_only_root"] is True
    assert options["docker_reachable"] is True
    assert options["default_agent_command"] == ["fake-agent"]
