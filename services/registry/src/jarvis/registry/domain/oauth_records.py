"""Sign-in state records of the authorization server (issue 31): put, get, take once, revoke a family, list.

The registry holds them so that every aggregator worker and replica sees the same clients, codes, refresh tokens,
users and roles. What a record means is the aggregator's (jarvis.aggregator.oauth.server); here it is a JSON body
under (kind, key), with the lifecycle the protocol needs: expiry, one-time consumption, family revocation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from jarvis.common.errors import InvalidArgument, NotFound
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.models import OAuthRecordRow
from jarvis.registry.storage.types import utcnow

# `agent`: a scheduled run's credential for the schedule's owner (decision 0057), kept until the run's time is up.
# `console`: the console's browser sessions and its one-time sign-in links, by their SHA-256 (aggregator/console).
KINDS = frozenset({"client", "pending", "consent", "code", "refresh", "user", "role", "agent", "console"})
_MAX_BODY = 64 * 1024
# Expired records (abandoned sign-ins, old codes, refresh tokens past their life) are deleted at most this often, by
# whichever write comes next: nothing else would, and a revoked refresh token is needed only until it expires.
PRUNE_SECONDS = 300.0


@dataclass(frozen=True)
class OAuthRecord:
    kind: str
    key: str
    family: str
    body: str
    expires_at: int  # unix seconds; 0: never
    consumed: bool = False


def _checked(kind: str, key: str) -> tuple[str, str]:
    if kind not in KINDS:
        raise InvalidArgument(f"unknown OAuth record kind '{kind}'; one of {', '.join(sorted(KINDS))}")
    if not key or len(key) > 300:
        raise InvalidArgument("an OAuth record key is required (1-300 characters)")
    return kind, key


def _count(result: Any) -> int:
    """Rows an UPDATE or DELETE changed (the typed Result does not declare the cursor's rowcount)."""
    return int(getattr(result, "rowcount", 0) or 0)


def _record(row: OAuthRecordRow) -> OAuthRecord:
    expires = int(row.expires_at.timestamp()) if row.expires_at is not None else 0
    return OAuthRecord(row.kind, row.key, row.family, row.body, expires, row.consumed_at is not None)


def _family(session: Session, family: str) -> list[OAuthRecordRow]:
    """The family's rows, locked for this transaction where the database locks rows (PostgreSQL; SQLite's writes are
    one at a time anyway). Its own statement, so what follows in the transaction reads after any write it waited on."""
    return list(session.scalars(select(OAuthRecordRow).where(OAuthRecordRow.family == family).with_for_update()))


def _live(row: OAuthRecordRow | None, now: datetime) -> bool:
    return row is not None and row.revoked_at is None and (row.expires_at is None or row.expires_at > now)


class OAuthRecords:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._pruned = 0.0

    def prune(self) -> int:
        """Delete every expired record; how many went."""
        self._pruned = time.monotonic()
        with self._db.write() as session:
            return _count(session.execute(delete(OAuthRecordRow).where(OAuthRecordRow.expires_at < utcnow())))

    def put(self, record: OAuthRecord) -> OAuthRecord:
        kind, key = _checked(record.kind, record.key)
        if len(record.body) > _MAX_BODY:
            raise InvalidArgument(f"an OAuth record body is at most {_MAX_BODY} bytes")
        expires = datetime.fromtimestamp(record.expires_at, UTC) if record.expires_at else None
        if time.monotonic() - self._pruned > PRUNE_SECONDS:
            self.prune()
        with self._db.write() as session:
            # A token issued into a family already revoked (its code or refresh token replayed while this one was
            # being issued) is born revoked: the replay's revocation may have run before this row existed.
            revoked = bool(record.family) and any(r.revoked_at is not None for r in _family(session, record.family))
            row = session.get(OAuthRecordRow, (kind, key))
            if row is None:
                row = OAuthRecordRow(kind=kind, key=key)
                session.add(row)
            row.family, row.body, row.expires_at = record.family, record.body, expires
            row.consumed_at = None
            row.created_at = utcnow()
            row.revoked_at = row.created_at if revoked else None
            session.flush()
            return _record(row)

    def get(self, kind: str, key: str) -> OAuthRecord:
        with self._db.read() as session:
            row = session.get(OAuthRecordRow, _checked(kind, key))
            if row is None or not _live(row, utcnow()):
                raise NotFound(f"no live OAuth {kind} under that key: it is unknown, expired or revoked")
            return _record(row)

    def take(self, kind: str, key: str) -> tuple[OAuthRecord, bool]:
        """The record, and whether this call consumed it (False: it had been consumed before, a replay)."""
        kind, key = _checked(kind, key)
        now = utcnow()
        with self._db.write() as session:
            row = session.get(OAuthRecordRow, (kind, key))
            if row is None or not _live(row, now):
                raise NotFound(f"no live OAuth {kind} under that key: it is unknown, expired or revoked")
            # The conditional update decides the race between two takes: only one sees a row change.
            changed = _count(
                session.execute(
                    update(OAuthRecordRow)
                    .where(OAuthRecordRow.kind == kind, OAuthRecordRow.key == key, OAuthRecordRow.consumed_at.is_(None))
                    .values(consumed_at=now)
                )
            )
            session.refresh(row)
            return _record(row), bool(changed)

    def revoke_family(self, family: str) -> int:
        if not family:
            raise InvalidArgument("a grant family id is required")
        with self._db.write() as session:
            _family(session, family)  # locked first: a put into it waits, then sees the revocation (and vice versa)
            return _count(
                session.execute(
                    update(OAuthRecordRow)
                    .where(OAuthRecordRow.family == family, OAuthRecordRow.revoked_at.is_(None))
                    .values(revoked_at=utcnow())
                )
            )

    def list(self, kind: str) -> list[OAuthRecord]:
        _checked(kind, "-")
        now = utcnow()
        query = select(OAuthRecordRow).where(OAuthRecordRow.kind == kind).order_by(OAuthRecordRow.created_at)
        with self._db.read() as session:
            return [_record(r) for r in session.scalars(query) if _live(r, now)]

    def delete(self, kind: str, key: str) -> bool:
        with self._db.write() as session:
            kind, key = _checked(kind, key)
            result = session.execute(
                delete(OAuthRecordRow).where(OAuthRecordRow.kind == kind, OAuthRecordRow.key == key)
            )
            return bool(_count(result))
