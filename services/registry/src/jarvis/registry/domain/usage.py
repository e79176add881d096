"""Usage statistics: batches of tool calls folded into per-(tool, action) counters."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from jarvis.common.errors import InvalidArgument
from jarvis.registry.domain.records import UsageEvent, UsageStat
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.models import UsageRow
from jarvis.registry.storage.types import utcnow


@dataclass
class _Totals:
    calls: int = 0
    errors: int = 0
    total_latency_ms: float = 0.0
    max_latency_ms: float = 0.0
    last_called_at: datetime | None = None


class Usage:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, events: Iterable[UsageEvent]) -> int:
        """Add a batch of calls; returns how many were recorded."""
        batch: dict[tuple[str, str], _Totals] = {}
        count = 0
        for event in events:
            tool = event.tool.strip()
            if not tool:
                raise InvalidArgument("every usage event needs a tool name")
            if event.latency_ms < 0:
                raise InvalidArgument(f"latency_ms of a '{tool}' event is negative")
            totals = batch.setdefault((tool, event.action.strip()), _Totals())
            at = event.at or utcnow()
            totals.calls += 1
            totals.errors += 0 if event.ok else 1
            totals.total_latency_ms += event.latency_ms
            totals.max_latency_ms = max(totals.max_latency_ms, event.latency_ms)
            totals.last_called_at = at if totals.last_called_at is None else max(totals.last_called_at, at)
            count += 1
        if batch:
            with self._db.write() as session:
                for (tool, action), totals in sorted(batch.items()):
                    _add(session, tool, action, totals)
        return count

    def stats(self, tool: str = "") -> list[UsageStat]:
        query = select(UsageRow).order_by(UsageRow.tool, UsageRow.action)
        if tool.strip():
            query = query.where(UsageRow.tool == tool.strip())
        with self._db.read() as session:
            return [
                UsageStat(
                    tool=r.tool,
                    action=r.action,
                    calls=r.calls,
                    errors=r.errors,
                    avg_latency_ms=r.total_latency_ms / r.calls if r.calls else 0.0,
                    max_latency_ms=r.max_latency_ms,
                    last_called_at=r.last_called_at,
                )
                for r in session.scalars(query)
            ]


def _add(session: Session, tool: str, action: str, totals: _Totals) -> None:
    """One atomic upsert: concurrent batches (several aggregator replicas) never lose counts."""
    dialect = session.get_bind().dialect.name
    insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(UsageRow).values(
        tool=tool,
        action=action,
        calls=totals.calls,
        errors=totals.errors,
        total_latency_ms=totals.total_latency_ms,
        max_latency_ms=totals.max_latency_ms,
        last_called_at=totals.last_called_at,
    )
    new = stmt.excluded
    stmt = stmt.on_conflict_do_update(
        index_elements=[UsageRow.tool, UsageRow.action],
        set_={
            "calls": UsageRow.calls + new.calls,
            "errors": UsageRow.errors + new.errors,
            "total_latency_ms": UsageRow.total_latency_ms + new.total_latency_ms,
            "max_latency_ms": case((new.max_latency_ms > UsageRow.max_latency_ms, new.max_latency_ms),
                                   else_=UsageRow.max_latency_ms),
            "last_called_at": case(
                (UsageRow.last_called_at.is_(None), new.last_called_at),
                (new.last_called_at > UsageRow.last_called_at, new.last_called_at),
                else_=UsageRow.last_called_at,
            ),
        },
    )
    session.execute(stmt)
