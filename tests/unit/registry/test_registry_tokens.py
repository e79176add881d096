"""Tokens: secret format, hash-only storage, verification, expiry, revocation, last-use throttling."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from jarvis.common.errors import InvalidArgument, NotFound, Unauthenticated
from jarvis.registry.app import Registry
from jarvis.registry.domain.tokens import SECRET_PREFIX, hash_secret, new_secret
from jarvis.registry.storage.models import TokenRow
from jarvis.registry.storage.types import utcnow


def test_secret_is_prefixed_and_long() -> None:
    secret = new_secret()
    assert secret.startswith(SECRET_PREFIX)
    assert len(secret) >= len(SECRET_PREFIX) + 43  # 32 random bytes, urlsafe base64
    assert new_secret() != secret


def test_only_the_sha256_is_stored(registry: Registry) -> None:
    token, secret = registry.tokens.create("ci", ["jarvis"])
    with registry.db.read() as session:
        row = session.get(TokenRow, token.id)
        assert row is not None
        assert row.secret_hash == hashlib.sha256(secret.encode()).hexdigest() == hash_secret(secret)
        stored = [str(getattr(row, c.key)) for c in TokenRow.__table__.columns]
    assert not any(secret in value for value in stored)
    assert token.prefix == secret[: len(token.prefix)]
    assert len(token.prefix) < 12


def test_verify_returns_the_token_and_records_use(registry: Registry) -> None:
    token, secret = registry.tokens.create("ci", ["jarvis:jarvis_server:list", "read"])
    verified = registry.tokens.verify(secret)
    assert verified.id == token.id
    assert verified.scopes == ("jarvis:jarvis_server:list", "read")
    assert verified.last_used_at is not None


def test_last_used_is_written_at_most_once_a_minute(registry: Registry) -> None:
    _, secret = registry.tokens.create("ci", ["*"])
    first = registry.tokens.verify(secret).last_used_at
    assert registry.tokens.verify(secret).last_used_at == first
    # Pretend the last use was two minutes ago: the next verification refreshes it.
    with registry.db.write() as session:
        session.execute(update(TokenRow).values(last_used_at=utcnow() - timedelta(minutes=2)))
    refreshed = registry.tokens.verify(secret).last_used_at
    assert first is not None
    assert refreshed is not None
    assert refreshed >= first


@pytest.mark.parametrize("secret", ["", "nope", "jv_" + "x" * 43])
def test_unknown_secret_is_unauthenticated_without_echo(registry: Registry, secret: str) -> None:
    with pytest.raises(Unauthenticated) as exc:
        registry.tokens.verify(secret)
    assert "invalid token" in exc.value.message
    if secret:
        assert secret not in exc.value.message


def test_expired_token_is_rejected(registry: Registry) -> None:
    token, secret = registry.tokens.create("short", ["read"], expires_in_seconds=60)
    assert token.expires_at is not None
    assert token.expires_at - token.created_at == timedelta(seconds=60)
    with registry.db.write() as session:
        session.execute(update(TokenRow).values(expires_at=utcnow() - timedelta(seconds=1)))
    with pytest.raises(Unauthenticated):
        registry.tokens.verify(secret)


def test_revoked_token_is_rejected_and_hidden_from_default_list(registry: Registry) -> None:
    token, secret = registry.tokens.create("gone", ["admin"])
    revoked = registry.tokens.revoke(token.id)
    assert revoked.revoked_at is not None
    assert registry.tokens.revoke(token.id).revoked_at == revoked.revoked_at  # idempotent
    with pytest.raises(Unauthenticated):
        registry.tokens.verify(secret)
    assert [t.id for t in registry.tokens.list()] == []
    assert [t.id for t in registry.tokens.list(include_revoked=True)] == [token.id]


def test_revoke_unknown_token_is_not_found(registry: Registry) -> None:
    with pytest.raises(NotFound, match="token 'abc' not found"):
        registry.tokens.revoke("abc")


@pytest.mark.parametrize(
    ("name", "scopes", "expires", "message"),
    [
        ("", ["read"], 0, "token name is required"),
        ("ci", [], 0, "at least one scope"),
        ("ci", ["jarvis::x"], 0, "invalid scope 'jarvis::x'"),
        ("ci", ["read"], -5, "expires_in_seconds must be positive"),
    ],
)
def test_create_rejects_bad_input(registry: Registry, name: str, scopes: list[str], expires: int, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        registry.tokens.create(name, scopes, expires)
    with registry.db.read() as session:
        assert session.scalars(select(TokenRow)).all() == []


def test_a_persons_token_names_them_and_only_they_list_or_revoke_it(registry: Registry) -> None:
    alices, _ = registry.tokens.create("laptop", ["jarvis"], owner="sub-alice")
    machines, _ = registry.tokens.create("ci", ["read"])
    assert alices.owner == "sub-alice"
    assert machines.owner == ""
    assert [t.id for t in registry.tokens.list(owner="sub-alice")] == [alices.id]
    assert [t.id for t in registry.tokens.list(owner="")] == [machines.id]
    assert {t.id for t in registry.tokens.list()} == {alices.id, machines.id}
    with pytest.raises(NotFound):  # bob names alice's token: not found, and it stays live
        registry.tokens.revoke(alices.id, owner="sub-bob")
    assert registry.tokens.list(owner="sub-alice")[0].revoked_at is None
    assert registry.tokens.revoke(alices.id, owner="sub-alice").revoked_at is not None
