"""The token vault (issue 32): each person's OAuth grant at each downstream server, sealed at rest.

A grant's secret (tokens, the client registration) is a JSON text the aggregator's OAuth client writes; here it is
sealed with Fernet under the vault key (jarvis.common.fernet_keys: given, from a file, or created in the data dir;
rotatable, newest first), together with the person and server it belongs to, so a row copied to another person or
server in the database does not open there. Nothing but the aggregator's internal plane reads a grant back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cryptography.fernet import MultiFernet
from sqlalchemy import delete, select

from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound
from jarvis.common.fernet_keys import Unsealable, seal, unseal
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.models import DownstreamGrantRow

MAX_SECRET_BYTES = 64 * 1024
KEY_FILE = "vault.key"


@dataclass(frozen=True)
class Grant:
    person: str
    server: str
    secret: str
    expires_at: int = 0
    refreshable: bool = False


@dataclass(frozen=True)
class GrantInfo:
    person: str
    server: str
    expires_at: int
    refreshable: bool
    updated_at: int
    has_tokens: bool


def _checked(person: str, server: str) -> tuple[str, str]:
    if not person or len(person) > 300 or "\0" in person:
        raise InvalidArgument("a grant needs its person (1-300 characters)")
    if not server or len(server) > 200 or "\0" in server:
        raise InvalidArgument("a grant needs its server (1-200 characters)")
    return person, server


def _info(row: DownstreamGrantRow) -> GrantInfo:
    return GrantInfo(
        row.person, row.server, row.expires_at, row.refreshable, int(row.updated_at.timestamp()), row.has_tokens
    )


class Vault:
    def __init__(self, db: Database, keys: Callable[[], MultiFernet]) -> None:
        self._db = db
        self._load_keys = keys  # loaded on first use: a registry that never seals needs no key
        self._loaded: MultiFernet | None = None

    @property
    def _keys(self) -> MultiFernet:
        if self._loaded is None:
            self._loaded = self._load_keys()
        return self._loaded

    def put(self, grant: Grant, *, has_tokens: bool) -> GrantInfo:
        person, server = _checked(grant.person, grant.server)
        if len(grant.secret.encode()) > MAX_SECRET_BYTES:
            raise InvalidArgument(f"a grant's secret is at most {MAX_SECRET_BYTES} bytes")
        sealed = seal(self._keys, person, server, grant.secret)
        with self._db.write() as session:
            row = session.get(DownstreamGrantRow, (person, server))
            if row is None:
                row = DownstreamGrantRow(person=person, server=server, ciphertext=sealed)
                session.add(row)
            row.ciphertext, row.expires_at = sealed, grant.expires_at
            row.refreshable, row.has_tokens = grant.refreshable, has_tokens
            session.flush()
            return _info(row)

    def get(self, person: str, server: str) -> Grant:
        with self._db.read() as session:
            row = session.get(DownstreamGrantRow, _checked(person, server))
            if row is None:
                raise NotFound(f"no grant of this person at server {server[:60]}")
            sealed, expires, refreshable = row.ciphertext, row.expires_at, row.refreshable
        return Grant(person, server, self._open(person, server, sealed), expires, refreshable)

    def delete(self, person: str, server: str) -> int:
        with self._db.write() as session:
            result = session.execute(
                delete(DownstreamGrantRow).where(
                    DownstreamGrantRow.person == person, DownstreamGrantRow.server == server
                )
            )
            return int(getattr(result, "rowcount", 0) or 0)

    def delete_person(self, person: str) -> int:
        with self._db.write() as session:
            result = session.execute(delete(DownstreamGrantRow).where(DownstreamGrantRow.person == person))
            return int(getattr(result, "rowcount", 0) or 0)

    def list(self, person: str) -> list[GrantInfo]:
        with self._db.read() as session:
            rows = session.scalars(
                select(DownstreamGrantRow)
                .where(DownstreamGrantRow.person == person)
                .order_by(DownstreamGrantRow.server)
            ).all()
            return [_info(r) for r in rows]

    def rotate(self) -> int:
        """Re-seal every grant under the newest key (after one was put first); how many were re-sealed."""
        count = 0
        with self._db.write() as session:
            for row in session.scalars(select(DownstreamGrantRow)).all():
                row.ciphertext = self._keys.rotate(row.ciphertext.encode()).decode()
                count += 1
        return count

    def _open(self, person: str, server: str, sealed: str) -> str:
        try:
            return unseal(self._keys, sealed, person, server)
        except Unsealable as exc:
            if exc.reason == "key":
                raise FailedPrecondition(
                    f"the grant at server {server[:60]} cannot be opened with the vault key (was "
                    "JARVIS_REGISTRY_VAULT_KEY changed without keeping the old key after the new one?); "
                    "connect again with jarvis_server action=connect"
                ) from None
            raise FailedPrecondition(
                f"the grant at server {server[:60]} was sealed for another person or server; "
                "connect again with jarvis_server action=connect"
            ) from None
