"""Usage statistics and the audit log, fed by the same batches of tool calls from the aggregators.

Every event is folded into per-(tool, action) counters. An event that says who called (its
surface is set) is also kept, as it is, in the audit log, which is pruned of entries older than
`audit.retention_days` as new ones arrive (at most once a minute per registry process).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, case, delete, insert, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from jarvis.common import latency_bins
from jarvis.common.errors import InvalidArgument
from jarvis.registry.domain.records import AuditEntry, UsageBucket, UsageEvent, UsageStat
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.models import AuditRow, UsageRow
from jarvis.registry.storage.types import utcnow


@dataclass
class _Totals:
    calls: int = 0
    errors: int = 0
    total_latency_ms: float = 0.0
    max_latency_ms: float = 0.0
    last_called_at: datetime | None = None


_PRUNE_EVERY_SECONDS = 60.0
# The table itself, not the ORM class: a Core executemany skips the ORM's per-row bookkeeping.
_AUDIT_TABLE = cast(Table, AuditRow.__table__)
_MAX_PAGE = 1000
MIN_BUCKET_SECONDS, MAX_BUCKET_SECONDS = 60, 86_400
_CHUNK = 10_000  # rows fetched at a time by over_time


def _aware(at: datetime) -> datetime:
    """A stored time, in UTC with its zone (SQLite hands them back naive)."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


class Usage:
    def __init__(self, db: Database, retention_days: Callable[[], int] = lambda: 30) -> None:
        self._db = db
        self._retention_days = retention_days
        self._pruned_at = 0.0

    def record(self, events: Iterable[UsageEvent]) -> int:
        """Add a batch of calls; returns how many were recorded."""
        batch: dict[tuple[str, str], _Totals] = {}
        audited: list[tuple[UsageEvent, datetime]] = []  # with when each happened
        count = 0
        for event in events:
            tool = event.tool.strip()
            if not tool:
                raise InvalidArgument("every usage event needs a tool name")
            if event.latency_ms < 0:
                raise InvalidArgument(f"latency_ms of a '{tool}' event is negative")
            key = (tool, event.action.strip())
            totals = batch.get(key)
            if totals is None:  # not setdefault: that builds a _Totals for every event
                totals = batch[key] = _Totals()
            at = event.at or utcnow()
            totals.calls += 1
            totals.errors += 0 if event.ok else 1
            totals.total_latency_ms += event.latency_ms
            totals.max_latency_ms = max(totals.max_latency_ms, event.latency_ms)
            totals.last_called_at = at if totals.last_called_at is None else max(totals.last_called_at, at)
            if event.surface.strip():
                audited.append((event, at))
            count += 1
        if batch:
            with self._db.write() as session:
                for (tool, action), totals in sorted(batch.items()):
                    _add(session, tool, action, totals)
                if audited:  # one executemany: ORM objects cost ~10x more per row, on every call's path
                    session.execute(insert(_AUDIT_TABLE), [_audit_row(e, at) for e, at in audited])
                self._prune(session)
        return count

    def audit(
        self, tool: str = "", token: str = "", since: datetime | None = None, before_id: int = 0, limit: int = 100
    ) -> list[AuditEntry]:
        """Audit entries, newest first; `token` matches a token id or name, or the person a name says called (a
        signed-in person's entries are named "alice@example.com via token <client>" or "... via session <id>")."""
        query = select(AuditRow).order_by(AuditRow.id.desc()).limit(min(max(limit, 1), _MAX_PAGE))
        if tool.strip():
            query = query.where(AuditRow.tool == tool.strip())
        if token.strip():
            who = token.strip()
            person = who.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + " via %"
            query = query.where(
                or_(AuditRow.token_id == who, AuditRow.token_name == who, AuditRow.token_name.like(person, escape="\\"))
            )
        if since is not None:
            query = query.where(AuditRow.at >= since)
        if before_id > 0:
            query = query.where(AuditRow.id < before_id)
        with self._db.read() as session:
            return [
                AuditEntry(
                    r.id,
                    UsageEvent(
                        tool=r.tool,
                        action=r.action,
                        ok=r.outcome == "ok",
                        latency_ms=r.latency_ms,
                        at=r.at,
                        token_id=r.token_id,
                        token_name=r.token_name,
                        surface=r.surface,
                        target=r.target,
                        outcome=r.outcome,
                        arguments_json=r.arguments_json,
                    ),
                )
                for r in session.scalars(query)
            ]

    def over_time(self, since: datetime, bucket_seconds: int) -> list[UsageBucket]:
        """The calls since `since` per bucket of `bucket_seconds`, tool, action and target, oldest first. Reads only
        the columns it counts, a chunk at a time, and keeps a histogram per group, not every latency: memory grows
        with the groups (buckets times tools), not the calls."""
        if not MIN_BUCKET_SECONDS <= bucket_seconds <= MAX_BUCKET_SECONDS:
            raise InvalidArgument(
                f"bucket_seconds must be {MIN_BUCKET_SECONDS} to {MAX_BUCKET_SECONDS} (a minute to a day); "
                f"got {bucket_seconds}"
            )
        query = (
            select(AuditRow.at, AuditRow.tool, AuditRow.action, AuditRow.target, AuditRow.outcome, AuditRow.latency_ms)
            .where(AuditRow.at >= since)
            .execution_options(yield_per=_CHUNK)
        )
        groups: dict[tuple[int, str, str, str], list[Any]] = {}  # key -> [calls, errors, bins]
        with self._db.read() as session:
            for at, tool, action, target, outcome, latency_ms in session.execute(query):
                bucket = int((_aware(at) - since).total_seconds() // bucket_seconds)
                group = groups.get((bucket, tool, action, target))
                if group is None:
                    group = groups[(bucket, tool, action, target)] = [0, 0, {}]
                group[0] += 1
                group[1] += 0 if outcome == "ok" else 1
                bin_index = latency_bins.bin_of(latency_ms)
                group[2][bin_index] = group[2].get(bin_index, 0) + 1
        return [
            UsageBucket(since + timedelta(seconds=bucket * bucket_seconds), tool, action, target, *figures)
            for (bucket, tool, action, target), figures in sorted(groups.items())
        ]

    def _prune(self, session: Session) -> None:
        now = time.monotonic()
        if now - self._pruned_at < _PRUNE_EVERY_SECONDS:
            return
        self._pruned_at = now
        session.execute(delete(AuditRow).where(AuditRow.at < utcnow() - timedelta(days=self._retention_days())))

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
            "max_latency_ms": case(
                (new.max_latency_ms > UsageRow.max_latency_ms, new.max_latency_ms), else_=UsageRow.max_latency_ms
            ),
            "last_called_at": case(
                (UsageRow.last_called_at.is_(None), new.last_called_at),
                (new.last_called_at > UsageRow.last_called_at, new.last_called_at),
                else_=UsageRow.last_called_at,
            ),
        },
    )
    session.execute(stmt)


def _audit_row(event: UsageEvent, at: datetime) -> dict[str, Any]:
    """An audit_events row's values (`at`: the event's time, or when it arrived)."""
    return {
        "at": at,
        "token_id": event.token_id[:64],
        "token_name": event.token_name[:200],
        "surface": event.surface.strip()[:100],
        "tool": event.tool.strip()[:200],
        "action": event.action.strip()[:100],
        "target": event.target[:200],
        "outcome": (event.outcome or ("ok" if event.ok else "error"))[:32],
        "latency_ms": event.latency_ms,
        "arguments_json": event.arguments_json,
    }
