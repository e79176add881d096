"""What the `jarvis_*` tools say about hosted servers: state, tools, uptime, errors, pins, restarts."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from dataclasses import dataclass

from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.hosting.naming import namespaced
from jarvis.aggregator.downstream.hosting.personal import PER_PERSON_STATE
from jarvis.aggregator.gateways.protocols import RegistryApi
from jarvis.aggregator.tooling.json_types import JsonObject
from jarvis.aggregator.views.registry import ToolPinView
from jarvis.common.errors import JarvisError

NOT_HOSTED = "not hosted by this process (only a running aggregator hosts downstream servers)"


@dataclass(frozen=True)
class Running:
    """The few fields `jarvis_server action=list` shows per server; None where this process knows nothing."""

    status: str
    uptime_seconds: float | None = None
    tools: int | None = None  # None: the registry's count stands (from the catalog, until the server first runs)
    last_error: str | None = None
    quarantined: list[str] | None = None


@dataclass(frozen=True)
class ChangedTool:
    """A quarantined tool: what changed since it was pinned, and the command that accepts the change."""

    tool: str
    changed_fields: list[str] | None = None  # None when the pins could not be read
    changed_at: str | None = None
    pinned: JsonObject | None = None
    now: JsonObject | None = None
    approve: str | None = None


@dataclass(frozen=True)
class RuntimeReport:
    """`jarvis_server action=info`'s `runtime`: the process (as `Snapshot` has it), its tools and its pins."""

    state: str
    note: str | None = None  # why nothing more is known (this process hosts no servers)
    pid: int | None = None
    uptime_seconds: float | None = None
    tools: int | None = None
    restarts: int | None = None
    failures: int | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    retry_in_seconds: float | None = None
    calls: int | None = None
    in_flight: int | None = None
    schema_fixes: dict[str, list[str]] | None = None
    container: str | None = None
    start_failures: int | None = None
    speaks: list[str] | None = None  # the protocol versions Jarvis reaches it in, the session's first
    served_tools: list[str] | None = None
    pinned_tools: int | None = None
    pins: str | None = None  # set only when the registry's pins could not be read, saying why
    quarantined: list[ChangedTool] | None = None


@dataclass(frozen=True)
class RestartOutcome:
    name: str
    outcome: str
    error: str | None = None
    pid: int | None = None
    tools: int | None = None


@dataclass(frozen=True)
class ServerLine:
    state: str
    tools: int
    uptime_seconds: float | None
    restarts: int
    last_error: str | None = None


@dataclass(frozen=True)
class HostedSummary:
    """For `jarvis_check_status`: whether this process hosts servers, and each one's state in a line."""

    hosted: bool
    detail: str | None = None
    synced_with_registry: bool | None = None
    running: int | None = None
    failing: int | None = None
    servers: dict[str, ServerLine] | None = None


def brief(host: DownstreamHost | None, name: str) -> Running:
    """The few fields `jarvis_server action=list` shows per server."""
    if host is None or name not in host.hosts:
        return Running(status="stopped", last_error=NOT_HOSTED if host is None else "")
    snap = host.hosts[name].snapshot()
    known = host.tools_of(name)
    return Running(
        status=_state(host, name, snap.state),
        uptime_seconds=snap.uptime_seconds,
        tools=len(known) if known is not None else None,
        last_error=snap.last_error or None,
        quarantined=snap.quarantined or None,
    )


async def detail(host: DownstreamHost | None, registry: RegistryApi, name: str) -> RuntimeReport:
    """`jarvis_server action=info`: the runtime state, the tools served, and every changed (quarantined) tool."""
    if host is None or name not in host.hosts:
        return RuntimeReport(state="stopped", note=NOT_HOSTED)
    snap = host.hosts[name].snapshot()
    known = host.tools_of(name)
    process = {f.name: getattr(snap, f.name) for f in dataclasses.fields(snap) if f.name != "quarantined"}
    process["state"] = _state(host, name, snap.state)
    served = [namespaced(name, t) for t in known.tools] if known is not None else None
    try:
        pins = await registry.list_tool_pins(name)
    except JarvisError as exc:
        names = [ChangedTool(tool) for tool in snap.quarantined]
        return RuntimeReport(**process, served_tools=served, pins=f"unavailable: {exc}", quarantined=names)
    return RuntimeReport(
        **process,
        served_tools=served,
        pinned_tools=sum(1 for p in pins if p.state == "pinned"),
        quarantined=[_changed(name, p) for p in pins if p.state == "quarantined"],
    )


def _state(host: DownstreamHost, name: str, state: str) -> str:
    """A server each person connects to has no shared process to be running or failing: its state says so (each
    person's own connection is `your_connection`)."""
    return PER_PERSON_STATE if host.personal.serves(name) else state


def _changed(server: str, pin: ToolPinView) -> ChangedTool:
    before, after = json.loads(pin.pinned_json or "{}"), json.loads(pin.seen_json or "{}")
    fields = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return ChangedTool(
        tool=pin.tool,
        changed_fields=fields,
        changed_at=pin.changed_at,
        pinned={k: before.get(k) for k in fields},
        now={k: after.get(k) for k in fields},
        approve=f"jarvis server approve {server} --tool {pin.tool}",
    )


async def restart(host: DownstreamHost | None, servers: list[str]) -> list[RestartOutcome]:
    """Restart each server (concurrently) and report each outcome."""
    if host is None:
        return [RestartOutcome(s, f"not restarted: {NOT_HOSTED}") for s in servers]

    async def one(name: str) -> RestartOutcome:
        if name not in host.hosts:
            return RestartOutcome(name, "failed", error="not installed")
        server = host.hosts[name]
        try:
            await server.restart(server.options.init_timeout)
        except JarvisError as exc:
            return RestartOutcome(name, "failed", error=str(exc))
        snap = server.snapshot()
        return RestartOutcome(name, "running", pid=snap.pid, tools=snap.tools)

    return list(await asyncio.gather(*(one(s) for s in servers)))


def summary(host: DownstreamHost | None) -> HostedSummary:
    """For `jarvis_check_status`: every hosted server's state in one line each."""
    if host is None:
        return HostedSummary(hosted=False, detail=NOT_HOSTED)
    servers = {}
    for name, server in sorted(host.hosts.items()):
        snap = server.snapshot()
        state = _state(host, name, snap.state)
        servers[name] = ServerLine(state, snap.tools, snap.uptime_seconds, snap.restarts, snap.last_error or None)
    states = [line.state for line in servers.values()]
    return HostedSummary(
        hosted=True,
        synced_with_registry=host.synced,
        running=states.count("running"),
        failing=states.count("failing"),
        servers=servers,
    )


async def refresh(host: DownstreamHost | None) -> None:
    """Apply a write made through this aggregator at once (installs, edits, profile changes)."""
    if host is not None:
        with contextlib.suppress(JarvisError):  # the watch loop retries; the write itself succeeded
            await host.refresh()
