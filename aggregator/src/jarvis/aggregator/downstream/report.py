"""What the `jarvis_*` tools say about hosted servers: state, tools, uptime, errors, pins, restarts."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from typing import Any

from jarvis.aggregator.downstream.host import DownstreamHost
from jarvis.aggregator.downstream.naming import namespaced
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.views.registry import ToolPinView
from jarvis.common.errors import JarvisError

NOT_HOSTED = "not hosted by this process (only a running aggregator hosts downstream servers)"


def brief(host: DownstreamHost | None, name: str) -> dict[str, Any]:
    """The few fields `jarvis_server action=list` shows per server."""
    if host is None or name not in host.hosts:
        return {"status": "stopped", "last_error": NOT_HOSTED if host is None else ""}
    snap = host.hosts[name].snapshot()
    known = host.tools_of(name)
    out: dict[str, Any] = {"status": snap.state, "uptime_seconds": snap.uptime_seconds}
    if known is not None:  # else the registry's count stands (from the catalog, until the server first runs)
        out["tools"] = len(known)
    if snap.last_error:
        out["last_error"] = snap.last_error
    if snap.quarantined:
        out["quarantined"] = snap.quarantined
    return out


async def detail(host: DownstreamHost | None, registry: RegistryGateway, name: str) -> dict[str, Any]:
    """`jarvis_server action=info`: the runtime state, the tools served, and every changed (quarantined) tool."""
    if host is None or name not in host.hosts:
        return {"state": "stopped", "note": NOT_HOSTED}
    snap = dataclasses.asdict(host.hosts[name].snapshot())
    known = host.tools_of(name)
    snap["served_tools"] = [namespaced(name, t) for t in known.tools] if known is not None else None
    try:
        pins = await registry.list_tool_pins(name)
    except JarvisError as exc:
        snap["pins"] = f"unavailable: {exc}"
        return snap
    snap["pinned_tools"] = sum(1 for p in pins if p.state == "pinned")
    snap["quarantined"] = [_changed(name, p) for p in pins if p.state == "quarantined"]
    return snap


def _changed(server: str, pin: ToolPinView) -> dict[str, Any]:
    before, after = json.loads(pin.pinned_json or "{}"), json.loads(pin.seen_json or "{}")
    fields = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return {
        "tool": pin.tool,
        "changed_fields": fields,
        "changed_at": pin.changed_at,
        "pinned": {k: before.get(k) for k in fields},
        "now": {k: after.get(k) for k in fields},
        "approve": f"jarvis server approve {server} --tool {pin.tool}",
    }


async def restart(host: DownstreamHost | None, servers: list[str]) -> list[dict[str, Any]]:
    """Restart each server (concurrently) and report each outcome."""
    if host is None:
        return [{"name": s, "outcome": f"not restarted: {NOT_HOSTED}"} for s in servers]

    async def one(name: str) -> dict[str, Any]:
        if name not in host.hosts:
            return {"name": name, "outcome": "failed", "error": "not installed"}
        server = host.hosts[name]
        try:
            await server.restart(server.options.init_timeout)
        except JarvisError as exc:
            return {"name": name, "outcome": "failed", "error": str(exc)}
        snap = server.snapshot()
        return {"name": name, "outcome": "running", "pid": snap.pid, "tools": snap.tools}

    return list(await asyncio.gather(*(one(s) for s in servers)))


def summary(host: DownstreamHost | None) -> dict[str, Any]:
    """For `jarvis_check_status`: every hosted server's state in one line each."""
    if host is None:
        return {"hosted": False, "detail": NOT_HOSTED}
    servers = {}
    for name, server in sorted(host.hosts.items()):
        snap = server.snapshot()
        servers[name] = {
            "state": snap.state,
            "tools": snap.tools,
            "uptime_seconds": snap.uptime_seconds,
            "restarts": snap.restarts,
            **({"last_error": snap.last_error} if snap.last_error else {}),
        }
    states = [s["state"] for s in servers.values()]
    return {
        "hosted": True,
        "synced_with_registry": host.synced,
        "running": states.count("running"),
        "failing": states.count("failing"),
        "servers": servers,
    }


async def refresh(host: DownstreamHost | None) -> None:
    """Apply a write made through this aggregator at once (installs, edits, profile changes)."""
    if host is not None:
        with contextlib.suppress(JarvisError):  # the watch loop retries; the write itself succeeded
            await host.refresh()
