"""Catalog entries from their sources: Jarvis surfaces, installed servers, uninstalled catalog entries."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator
from typing import Any

from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.downstream.hosting.exposure import CONNECT_TOOL, connect_tool
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.hosting.naming import namespaced
from jarvis.aggregator.downstream.hosting.schema import normalise_input_schema
from jarvis.aggregator.tooling.json_types import JsonObject
from jarvis.aggregator.tooling.tool import Surface
from jarvis.aggregator.views.registry import CatalogEntryView, ServerView, ToolSummaryView

NOT_HOSTED = (
    "installed, but this aggregator hosts no downstream servers, so it cannot call the tool; "
    "see jarvis_server action=info name={server} for how to reach it"
)


def _schema(summary: ToolSummaryView) -> JsonObject:
    """The tool's input schema as MCP accepts it (an object schema), whatever the server declared."""
    return normalise_input_schema(summary.input_schema)[0]


def gateway_entries(listing: list[dict[str, Any]], gateway: str = "debug") -> Iterator[ToolEntry]:
    """Entries for the debug gateway's sub-tools, from its `list:<category>` answers.

    Each is named `debug__<tool>` and carries the exact `debug(tool=..., arguments=...)` call, which is
    also what tool_call runs for it: tool_call name=debug__jira_search arguments={"jql": "..."}.
    """
    for category in listing:
        for tool in category.get("tools") or []:
            name = str(tool.get("name") or "")
            if not name:
                continue
            required = tool.get("required") or {}
            properties = {**required, **(tool.get("optional") or {})}
            # Each argument as the debug service describes it: already JSON Schema (jarvis.common.params), its type
            # included, so a TypeScript declaration types `log_group` as a string rather than `unknown`.
            schema: JsonObject = {
                "type": "object",
                "properties": {k: dict(v) for k, v in properties.items() if isinstance(v, dict)},
            }
            if required:
                schema["required"] = list(required)
            yield ToolEntry(
                name=namespaced(gateway, name),
                description=str(tool.get("description") or ""),
                source=gateway,
                kind="surface",
                tool=name,
                category=str(category.get("category") or ""),
                input_schema=schema,
                context=str(category.get("description") or ""),
                gateway=gateway,
                call=str(tool.get("example") or f"{gateway}(tool=\"{name}\", arguments='{{}}')"),
            )


def surface_entries(surfaces: Iterable[Surface], skip: str) -> Iterator[ToolEntry]:
    """One entry per consolidated tool of every surface but `skip` (discovery does not list itself)."""
    for surface in surfaces:
        if surface.name == skip:
            continue
        for tool in surface.tools:
            yield ToolEntry(
                name=tool.name,
                description=tool.description,
                source=surface.name,
                kind="surface",
                tool=tool.name,
                category=surface.name,
                keywords=tuple(tool.action_names),
                input_schema=tool.input_schema,
                # The tool's summary first: the embedding reads the first 200 characters of the context.
                context=f"{tool.summary} {surface.instructions}".strip(),
            )


def _served(server: ServerView, host: DownstreamHost | None) -> list[tuple[str, str, JsonObject]]:
    """(name, description, input schema) of each tool the server offers.

    The host's view wins: what the server serves now, or served when last seen (its pins), without
    quarantined tools. Before the host has seen it, the tools its catalog entry declares; for a server each person
    connects to that declares none, the one `connect` tool a profile lists for it (its call answers the caller's
    consent link), so that `tool_call` and `code_run` reach what a profile does.
    """
    live = host.tools_of(server.name) if host is not None else None
    if live is None and host is not None and server.name in host.personal.plans and not server.tools:
        connect = connect_tool(server.name)
        return [(CONNECT_TOOL, connect["description"], connect["inputSchema"])]
    if live is not None:
        return [
            (name, str(d.get("description") or ""), normalise_input_schema(d.get("inputSchema"))[0])
            for name, d in live.tools.items()
        ]
    return [(t.name, t.description, _schema(t)) for t in server.tools]


def server_entries(
    servers: Iterable[ServerView], categories: dict[str, str], host: DownstreamHost | None
) -> Iterator[ToolEntry]:
    """Entries for the tools of installed servers; callable when this aggregator hosts downstream servers."""
    for server in servers:
        hint = "" if host is not None else NOT_HOSTED.format(server=server.name)
        for name, description, schema in _served(server, host):
            yield ToolEntry(
                name=namespaced(server.name, name),
                description=description,
                source=server.name,
                kind="server",
                tool=name,
                category=categories.get(server.catalog_name, ""),
                input_schema=schema,
                callable=host is not None,
                install_hint=hint,
                context=server.description,
            )


def host_fingerprint(servers: Iterable[ServerView], host: DownstreamHost | None) -> bytes:
    """What the host knows of the servers' tools, to tell a changed catalog from an unchanged one."""
    if host is None:
        return b""
    known = {s.name: (live.tools if (live := host.tools_of(s.name)) is not None else None) for s in servers}
    return json.dumps(known, sort_keys=True, default=str).encode()


def catalog_entries(entries: Iterable[CatalogEntryView], server_names: Collection[str] = ()) -> Iterator[ToolEntry]:
    """Entries for the tools of catalog entries nobody installed: findable, not callable, with how to install.

    An entry named like an installed server is left out too: its tools would be listed under that server's
    namespace as "not installed" beside the server's own (a server created by hand as `everything` and the
    catalog's `everything`), and it could not be installed under that name anyway."""
    for entry in entries:
        if entry.installed or entry.name in server_names:
            continue  # its tools come from the installed server
        needs = f" (it needs {', '.join(entry.required_env)}: pass them as env)" if entry.required_env else ""
        hint = f"not installed: an admin installs it with jarvis_server action=install name={entry.name}{needs}"
        for summary in entry.tools:
            yield ToolEntry(
                name=namespaced(entry.name, summary.name),
                description=summary.description,
                source=entry.name,
                kind="catalog",
                tool=summary.name,
                category=entry.category,
                input_schema=_schema(summary),
                callable=False,
                install_hint=hint,
                context=f"{entry.title} {entry.description}",
            )
