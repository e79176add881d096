"""Ordered, persisted event streams (one per session or build), readable from a cursor, with long-poll."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, func, select

from jarvis.common.sql.database import Database
from jarvis.common.sql.types import utcnow
from jarvis.runtime.domain.models import Event
from jarvis.runtime.storage.models import EventRow

MAX_WAIT_SECONDS = 20.0


class EventLog:
    """Appends events with gap-free sequence numbers per stream and wakes readers waiting for them.

    Sequence numbers are assigned here under a per-stream lock, so one runtime process is the
    only writer of a stream (sessions belong to the process that spawned them).
    """

    def __init__(self, db: Database, payload_max: int) -> None:
        self._db = db
        self._payload_max = payload_max
        self._next: dict[str, int] = {}
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)

    def _reserve(self, stream_id: str, count: int) -> int:
        """First of `count` fresh sequence numbers (call with the lock held)."""
        if stream_id not in self._next:
            with self._db.read() as session:
                last = session.scalar(select(func.max(EventRow.seq)).where(EventRow.stream_id == stream_id))
            self._next[stream_id] = (last or 0) + 1
        first = self._next[stream_id]
        self._next[stream_id] = first + count
        return first

    def payload(self, value: Any) -> str:
        """JSON text of `value`, cut (and marked) when over the per-event limit."""
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
        if len(text.encode()) <= self._payload_max:
            return text
        cut = text.encode()[: self._payload_max - 64].decode(errors="ignore")
        return json.dumps({"truncated": True, "text": cut}, separators=(",", ":"))

    def append(self, project_id: str, stream_id: str, items: Iterable[tuple[str, Any]]) -> int:
        """Persist (type, payload) items in order, in one transaction; returns the last sequence number."""
        batch = [(kind[:64], self.payload(value)) for kind, value in items]
        if not batch:
            return self.last(stream_id)
        with self._changed:
            first = self._reserve(stream_id, len(batch))
            now = utcnow()
            with self._db.write() as session:
                session.add_all(
                    [
                        EventRow(
                            project_id=project_id,
                            stream_id=stream_id,
                            seq=first + i,
                            type=kind,
                            payload=text,
                            created_at=now,
                        )
                        for i, (kind, text) in enumerate(batch)
                    ]
                )
            self._changed.notify_all()
        return first + len(batch) - 1

    def last(self, stream_id: str) -> int:
        with self._lock:
            if stream_id in self._next:
                return self._next[stream_id] - 1
        with self._db.read() as session:
            return int(session.scalar(select(func.max(EventRow.seq)).where(EventRow.stream_id == stream_id)) or 0)

    def page(self, stream_id: str, after: int, limit: int, wait: float) -> tuple[list[Event], int]:
        """Events after the cursor `after` (oldest first) and the next cursor; waits up to `wait` s for one."""
        deadline = time.monotonic() + min(max(wait, 0.0), MAX_WAIT_SECONDS)
        while True:
            with self._db.read() as session:
                rows = session.scalars(
                    select(EventRow)
                    .where(EventRow.stream_id == stream_id, EventRow.seq > after)
                    .order_by(EventRow.seq)
                    .limit(limit)
                ).all()
            if rows or time.monotonic() >= deadline:
                events = [Event(r.seq, r.type, r.payload, r.created_at) for r in rows]
                return events, (events[-1].seq if events else after)
            with self._changed:
                if self.last(stream_id) <= after:
                    self._changed.wait(min(0.5, max(0.0, deadline - time.monotonic())))

    def find(self, stream_id: str, types: tuple[str, ...], needle: str) -> list[Event]:
        """Events of the given types whose payload contains `needle` (then checked exactly by the caller)."""
        with self._db.read() as session:
            rows = session.scalars(
                select(EventRow)
                .where(EventRow.stream_id == stream_id, EventRow.type.in_(types), EventRow.payload.contains(needle))
                .order_by(EventRow.seq)
            )
            return [Event(r.seq, r.type, r.payload, r.created_at) for r in rows]

    def drop(self, stream_ids: Iterable[str]) -> None:
        ids = list(stream_ids)
        if not ids:
            return
        with self._db.write() as session:
            session.execute(delete(EventRow).where(EventRow.stream_id.in_(ids)))
        with self._lock:
            for stream_id in ids:
                self._next.pop(stream_id, None)
