"""The LiveMCPBench tools.json format: servers with Claude-style mcpServers config and tool lists."""

from __future__ import annotations

from typing import Any

from jarvis.registry.domain.catalog.parsing import (
    ParsedCatalog,
    SkipEntry,
    checked_launch,
    obj,
    parse_tools,
    seq,
    text,
)
from jarvis.registry.domain.names import slugify
from jarvis.registry.domain.records import CatalogEntry, Launch

FORMAT = "livemcpbench"


def looks_like(data: Any) -> bool:
    return isinstance(data, list) and any(
        isinstance(i, dict) and isinstance(i.get("config"), dict) and "mcpServers" in i["config"] for i in data
    )


def parse(data: Any) -> ParsedCatalog:
    parsed = ParsedCatalog(FORMAT)
    for i, item in enumerate(data if isinstance(data, list) else [data]):
        label = text(item.get("name")) if isinstance(item, dict) else ""
        try:
            parsed.entries.extend(_entries(item))
        except SkipEntry as exc:
            parsed.skipped.append(f"{label or f'#{i + 1}'}: {exc}")
    return parsed


def _entries(item: Any) -> list[CatalogEntry]:
    if not isinstance(item, dict):
        raise SkipEntry("not a JSON object")
    servers = obj(item.get("config")).get("mcpServers")
    if not isinstance(servers, dict) or not servers:
        raise SkipEntry("config.mcpServers is missing or empty")
    tool_groups = obj(item.get("tools"))
    entries = []
    for key, server in servers.items():
        name = slugify(key)
        if name is None:
            raise SkipEntry(f"server key '{key}' cannot be turned into a catalog name")
        launch, required_env = _launch(server)
        # Tools are keyed like mcpServers; a single group belongs to the single server.
        group = tool_groups.get(key)
        if group is None and len(servers) == 1 and len(tool_groups) == 1:
            group = next(iter(tool_groups.values()))
        tools = parse_tools(obj(group).get("tools"))
        entries.append(
            CatalogEntry(
                name=name,
                launch=launch,
                title=text(item.get("name")),
                description=text(item.get("description")),
                category=text(item.get("category")),
                homepage=text(item.get("web")),
                required_env=required_env,
                tools=tools,
            )
        )
    return entries


def _launch(server: Any) -> tuple[Launch, tuple[str, ...]]:
    if not isinstance(server, dict):
        raise SkipEntry("its mcpServers entry is not an object")
    if server.get("url"):
        kind = text(server.get("type")) or "streamable-http"
        if kind not in ("streamable-http", "http", "streamableHttp"):
            raise SkipEntry(f"transport '{kind}' is not supported (stdio or streamable-http)")
        return checked_launch(Launch("streamable-http", url=text(server["url"]))), ()
    env_raw = obj(server.get("env"))
    # An empty value in a client config is a placeholder the user has to fill in.
    env = {str(k): str(v) for k, v in env_raw.items() if v not in (None, "")}
    required = tuple(str(k) for k, v in env_raw.items() if v in (None, ""))
    args = seq(server.get("args"))
    launch = Launch("stdio", command=text(server.get("command")), args=tuple(str(a) for a in args), env=env)
    return checked_launch(launch), required
