"""Tool pins: the first-seen definition of each hosted server's tools; changed tools are quarantined.

A hosted server could change what a tool does (its description, schema or annotations) after an
admin installed it: the "rug pull" of an MCP server. The aggregator records what it sees; the
first definition of a tool is pinned, and a later different one quarantines the tool until an
admin approves it. Hashes are of canonical JSON, so key order and whitespace never count.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from jarvis.common.errors import InvalidArgument, NotFound
from jarvis.registry.domain.servers import find_server
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.models import ServerRow, ToolPinRow
from jarvis.registry.storage.types import utcnow

PINNED = "pinned"
QUARANTINED = "quarantined"


@dataclass(frozen=True)
class SeenTool:
    name: str
    definition_json: str


@dataclass(frozen=True)
class ToolPin:
    server: str
    tool: str
    state: str
    pinned_sha256: str
    seen_sha256: str
    pinned_json: str
    seen_json: str
    pinned_at: datetime
    changed_at: datetime | None


def canonical(definition_json: str, tool: str) -> tuple[str, str]:
    """(canonical JSON, its SHA-256) of a tool definition; InvalidArgument for text that is not a JSON object."""
    try:
        value = json.loads(definition_json)
    except ValueError as exc:
        raise InvalidArgument(f"definition of tool '{tool}' is not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise InvalidArgument(f"definition of tool '{tool}' must be a JSON object")
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text, hashlib.sha256(text.encode()).hexdigest()


class Pins:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, server: str, tools: Sequence[SeenTool]) -> list[ToolPin]:
        """Pin new tools, quarantine changed ones, release ones that changed back; all pins of the server."""
        seen = {t.name: canonical(t.definition_json, t.name) for t in tools}
        with self._db.write() as session:
            row = find_server(session, server)
            pins = {p.tool: p for p in _pins_of(session, row.id)}
            now = utcnow()
            for name, (text, digest) in seen.items():
                pin = pins.get(name)
                if pin is None:
                    pin = ToolPinRow(
                        server_id=row.id,
                        tool=name,
                        state=PINNED,
                        pinned_sha256=digest,
                        pinned_json=text,
                        seen_sha256=digest,
                        seen_json=text,
                        pinned_at=now,
                    )
                    session.add(pin)
                    pins[name] = pin
                elif digest == pin.pinned_sha256:
                    pin.state, pin.seen_sha256, pin.seen_json, pin.changed_at = PINNED, digest, text, None
                elif digest != pin.seen_sha256 or pin.state != QUARANTINED:
                    pin.state, pin.seen_sha256, pin.seen_json, pin.changed_at = QUARANTINED, digest, text, now
            # The tools a server really serves are better search material than a catalog's guess.
            row.tools = [_summary(pins[n].pinned_json) for n in seen if pins[n].state == PINNED]
            session.flush()
            return [_pin(row.name, p) for p in sorted(pins.values(), key=lambda p: p.tool)]

    def approve(self, server: str, tools: Iterable[str] = ()) -> list[ToolPin]:
        """Accept the changed definitions of `tools` (default: every quarantined tool of the server)."""
        wanted = [t.strip() for t in tools if t.strip()]
        with self._db.write() as session:
            row = find_server(session, server)
            pins = {p.tool: p for p in _pins_of(session, row.id)}
            unknown = [t for t in wanted if t not in pins]
            if unknown:
                raise NotFound(
                    f"server '{row.name}' has no pinned tool(s) {', '.join(unknown)}; "
                    f"its tools: {', '.join(sorted(pins)) or 'none seen yet'}"
                )
            for pin in (pins[t] for t in wanted) if wanted else pins.values():
                if pin.state == QUARANTINED:
                    pin.state, pin.pinned_sha256, pin.pinned_json = PINNED, pin.seen_sha256, pin.seen_json
                    pin.pinned_at, pin.changed_at = utcnow(), None
            session.flush()
            return [_pin(row.name, p) for p in sorted(pins.values(), key=lambda p: p.tool)]

    def list(self, server: str = "") -> list[ToolPin]:
        with self._db.read() as session:
            query = select(ServerRow.name, ToolPinRow).join(ServerRow, ServerRow.id == ToolPinRow.server_id)
            if server.strip():
                query = query.where(ToolPinRow.server_id == find_server(session, server).id)
            rows = session.execute(query.order_by(ServerRow.name, ToolPinRow.tool))
            return [_pin(name, pin) for name, pin in rows]


def _pins_of(session: Session, server_id: int) -> list[ToolPinRow]:
    return list(session.scalars(select(ToolPinRow).where(ToolPinRow.server_id == server_id)))


def _summary(definition_json: str) -> dict[str, Any]:
    definition = json.loads(definition_json)
    summary = {"name": definition.get("name", ""), "description": definition.get("description") or ""}
    if isinstance(definition.get("inputSchema"), dict):
        summary["inputSchema"] = definition["inputSchema"]
    return summary


def _pin(server: str, row: ToolPinRow) -> ToolPin:
    return ToolPin(
        server=server,
        tool=row.tool,
        state=row.state,
        pinned_sha256=row.pinned_sha256,
        seen_sha256=row.seen_sha256,
        pinned_json=row.pinned_json,
        seen_json=row.seen_json,
        pinned_at=row.pinned_at,
        changed_at=row.changed_at,
    )
