"""Access tokens: issue once, store only the SHA-256 of the secret, verify, revoke."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import select, update

from jarvis.common.errors import InvalidArgument, NotFound, Unauthenticated
from jarvis.common.scopes import validate_scopes
from jarvis.registry.domain.records import Token
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.models import TokenRow
from jarvis.registry.storage.types import utcnow

SECRET_PREFIX = "jv_"  # noqa: S105 - a public marker, not a secret; lets secret scanners recognise leaked Jarvis tokens
_SHOWN_PREFIX_LENGTH = 8
# last_used_at is informational; refreshing it at most this often keeps verification read-mostly.
LAST_USED_RESOLUTION = timedelta(minutes=1)
_INVALID = "invalid token: it is unknown, revoked or expired; create a new one with CreateToken"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


class Tokens:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(
        self, name: str, scopes: Iterable[str], expires_in_seconds: int = 0, *, owner: str = ""
    ) -> tuple[Token, str]:
        """The new token and its secret; the secret is not stored and cannot be shown again. `owner` is the person it
        acts for (their subject), "" for a machine's: what the owner may do is checked where it is used."""
        name = name.strip()
        if not name or len(name) > 200:
            raise InvalidArgument("token name is required (1-200 characters), e.g. 'ci' or 'alice-laptop'")
        if expires_in_seconds < 0:
            raise InvalidArgument("expires_in_seconds must be positive, or 0 for a token that never expires")
        checked = validate_scopes(scopes)
        secret = new_secret()
        now = utcnow()
        row = TokenRow(
            id=secrets.token_hex(8),
            name=name,
            prefix=secret[:_SHOWN_PREFIX_LENGTH],
            secret_hash=hash_secret(secret),
            scopes=list(checked),
            created_at=now,
            expires_at=now + timedelta(seconds=expires_in_seconds) if expires_in_seconds else None,
            owner=owner.strip()[:300],
        )
        with self._db.write() as session:
            session.add(row)
            session.flush()
            return token_from_row(row), secret

    def list(self, include_revoked: bool = False, *, owner: str | None = None) -> list[Token]:
        """Every token, or only `owner`'s ("" for machines' tokens)."""
        query = select(TokenRow).order_by(TokenRow.created_at, TokenRow.id)
        if owner is not None:
            query = query.where(TokenRow.owner == owner)
        if not include_revoked:
            query = query.where(TokenRow.revoked_at.is_(None))
        with self._db.read() as session:
            return [token_from_row(r) for r in session.scalars(query)]

    def revoke(self, token_id: str, *, owner: str | None = None) -> Token:
        """Revoke a token (with `owner`, only if it is theirs: another's is not found, so an id reveals nothing);
        revoking it again keeps the first revocation time."""
        with self._db.write() as session:
            row = session.get(TokenRow, token_id.strip())
            if row is None or (owner is not None and row.owner != owner):
                raise NotFound(f"token '{token_id}' not found; ListTokens shows token ids")
            if row.revoked_at is None:
                row.revoked_at = utcnow()
            return token_from_row(row)

    def verify(self, secret: str) -> Token:
        """The token a valid, unexpired, unrevoked secret belongs to, else Unauthenticated."""
        if not secret.startswith(SECRET_PREFIX):
            raise Unauthenticated(f"invalid token: Jarvis tokens start with '{SECRET_PREFIX}'")
        digest = hash_secret(secret)
        now = utcnow()
        with self._db.read() as session:
            row = session.scalar(select(TokenRow).where(TokenRow.secret_hash == digest))
            # The lookup is by hash, so timing reveals nothing about the secret; compare_digest
            # keeps the final equality check constant-time regardless of how the index matched.
            if row is None or not hmac.compare_digest(row.secret_hash, digest):
                raise Unauthenticated(_INVALID)
            if row.revoked_at is not None or (row.expires_at is not None and row.expires_at <= now):
                raise Unauthenticated(_INVALID)
            token = token_from_row(row)
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
            self._touch(token.id, now)
            token = replace(token, last_used_at=now)
        return token

    def _touch(self, token_id: str, now: datetime) -> None:
        cutoff = now - LAST_USED_RESOLUTION
        with self._db.write() as session:
            # The condition makes concurrent verifications write at most once per resolution.
            session.execute(
                update(TokenRow)
                .where(TokenRow.id == token_id)
                .where((TokenRow.last_used_at.is_(None)) | (TokenRow.last_used_at < cutoff))
                .values(last_used_at=now)
            )


def token_from_row(row: TokenRow) -> Token:
    return Token(
        id=row.id,
        name=row.name,
        prefix=row.prefix,
        scopes=tuple(row.scopes),
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        last_used_at=row.last_used_at,
        owner=row.owner,
    )
