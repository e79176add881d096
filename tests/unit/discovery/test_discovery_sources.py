"""Catalog entries from surfaces, installed servers and uninstalled catalog entries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jarvis.aggregator.discovery.dense import dense_text
from jarvis.aggregator.discovery.sources import catalog_entries, server_entries, surface_entries
from jarvis.aggregator.gateways.registry_convert import catalog_entry_view, server_view
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Surface, Tool
from jarvis.api.registry.v1 import registry_pb2 as pb
from tests.support.offline_surfaces import offline_surfaces


async def _noop(_: dict[str, Any], __: Principal) -> Any:
    return None


def test_one_entry_per_consolidated_tool_with_actions_as_keywords() -> None:
    tool = Tool(
        name="jarvis_profile",
        description="Profiles list|create",
        actions=[Action("list", _noop, read_only=True), Action("create", _noop)],
    )
    surfaces = [
        Surface("jarvis", "/mcp/jarvis", [tool], instructions="Manage Jarvis"),
        Surface("discovery", "/mcp", [Tool(name="tool_find", description="Find", handler=_noop)]),
    ]
    entries = list(surface_entries(surfaces, skip="discovery"))
    assert [e.name for e in entries] == ["jarvis_profile"]
    entry = entries[0]
    assert entry.keywords == ("list", "create")
    assert (entry.kind, entry.source, entry.category, entry.callable) == ("surface", "jarvis", "jarvis", True)
    assert entry.input_schema["properties"]["action"]["enum"] == ["list", "create"]
    assert entry.context == "Manage Jarvis"


def test_a_tools_summary_is_what_discovery_reads_first_and_every_action_tool_has_one() -> None:
    """tool_find's embedding reads the first 200 characters of the context: the summary in words comes first."""
    tool = Tool(
        name="token",
        description="Access tokens: create|list|revoke",
        summary="Access tokens for calling Jarvis: create one, list them, revoke one.",
        actions=[Action("create", _noop)],
    )
    [entry] = surface_entries([Surface("orchestrator", "/mcp/o", [tool], instructions="Run projects")], skip="")
    assert entry.context == "Access tokens for calling Jarvis: create one, list them, revoke one. Run projects"
    assert "revoke one." in dense_text(entry)
    with pytest.raises(ValueError, match="summary of token is over 200 characters"):
        Tool(name="token", description="x", summary="y" * 201, actions=[Action("create", _noop)])
    assert [t.name for s in offline_surfaces() for t in s.tools if t.actions and not t.summary] == []


def _summary(name: str, schema: Any) -> pb.ToolSummary:
    raw = schema if isinstance(schema, str) else json.dumps(schema)
    return pb.ToolSummary(name=name, description=f"{name} things", input_schema_json=raw)


def test_installed_servers_tools_are_namespaced_and_normalised() -> None:
    server = pb.Server(
        name="gh",
        description="GitHub",
        catalog_name="github",
        tools=[
            _summary("create_issue", {"properties": {"title": {"type": "string"}}}),
            _summary("broken", "{not json"),
            _summary("odd", {"type": "string"}),
        ],
    )
    entries = {e.name: e for e in server_entries([server_view(server)], {"github": "Developer"}, host=None)}
    assert set(entries) == {"gh__create_issue", "gh__broken", "gh__odd"}
    issue = entries["gh__create_issue"]
    assert (issue.tool, issue.source, issue.category, issue.kind) == ("create_issue", "gh", "Developer", "server")
    assert issue.input_schema["type"] == "object"
    assert issue.input_schema["properties"]["title"] == {"type": "string"}
    assert entries["gh__broken"].input_schema == {"type": "object"}
    assert entries["gh__odd"].input_schema["type"] == "object"
    assert not issue.callable  # no downstream host in this aggregator
    assert "jarvis_server action=info name=gh" in issue.install_hint


def test_uninstalled_catalog_entries_say_how_to_install() -> None:
    entry = pb.CatalogEntry(
        name="github",
        title="GitHub",
        description="Issues and PRs",
        category="Developer",
        required_env=["GITHUB_TOKEN"],
        tools=[_summary("create_issue", {})],
    )
    installed = pb.CatalogEntry(name="time", installed=True, tools=[_summary("now", {})])
    entries = list(catalog_entries([catalog_entry_view(entry), catalog_entry_view(installed)]))
    assert [e.name for e in entries] == ["github__create_issue"]
    found = entries[0]
    assert not found.callable
    assert found.kind == "catalog"
    assert "jarvis_server action=install name=github" in found.install_hint
    assert "GITHUB_TOKEN" in found.install_hint


def test_a_catalog_entry_named_like_an_installed_server_is_left_out() -> None:
    catalog = pb.CatalogEntry(name="everything", tools=[_summary("add", {}), _summary("echo", {})])
    other = pb.CatalogEntry(name="github", tools=[_summary("create_issue", {})])
    views = [catalog_entry_view(catalog), catalog_entry_view(other)]
    assert [e.name for e in catalog_entries(views, {"everything"})] == ["github__create_issue"]
    assert {e.name for e in catalog_entries(views)} == {"everything__add", "everything__echo", "github__create_issue"}
