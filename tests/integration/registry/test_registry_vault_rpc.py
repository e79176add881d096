"""DownstreamVaultService over a real gRPC server on port 0 (SQLite and PostgreSQL): a person's grant stored sealed
(the database holds no token in clear), read back, listed without secrets, deleted by server and by person; a row
moved to another person does not open; the key rotates (new key first, old kept) and re-seals (issue 32)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text

from jarvis.api.registry.v1 import vault_pb2 as pb
from jarvis.api.registry.v1 import vault_pb2_grpc as pb_grpc
from jarvis.common.fernet_keys import KeyMissing, load_keys
from jarvis.common.grpc_server import create_server
from jarvis.registry.app import Registry
from jarvis.registry.domain.vault import Grant, Vault
from jarvis.registry.server import registry_bindings

SECRET = '{"tokens": {"access_token": "at-very-secret", "refresh_token": "rt-very-secret"}}'


@pytest.fixture
def vault(registry: Registry, tmp_path: Path) -> Iterator[pb_grpc.DownstreamVaultServiceStub]:
    running = create_server(registry_bindings(registry, [tmp_path]), "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{running.port}")
    yield pb_grpc.DownstreamVaultServiceStub(channel)
    channel.close()
    running.stop(0)


def test_a_grant_is_sealed_read_back_listed_and_deleted(
    vault: pb_grpc.DownstreamVaultServiceStub, registry: Registry
) -> None:
    info = vault.PutGrant(
        pb.DownstreamGrant(
            person="alice",
            server="notes",
            secret_json=SECRET,
            expires_at=2_000_000_000,
            refreshable=True,
            has_tokens=True,
        )
    )
    assert (info.person, info.server, info.has_tokens, info.refreshable) == ("alice", "notes", True, True)
    vault.PutGrant(pb.DownstreamGrant(person="bob", server="notes", secret_json="{}"))
    with registry.db.read() as session:
        stored = " ".join(session.execute(text("SELECT ciphertext FROM downstream_grants")).scalars())
    assert "very-secret" not in stored
    assert "access_token" not in stored

    grant = vault.GetGrant(pb.DownstreamGrantKey(person="alice", server="notes"))
    assert grant.secret_json == SECRET
    listed = vault.ListGrants(pb.ListDownstreamGrantsRequest(person="bob")).grants
    assert [(g.server, g.has_tokens) for g in listed] == [("notes", False)]
    assert "secret" not in str(listed)

    with pytest.raises(grpc.RpcError) as missing:
        vault.GetGrant(pb.DownstreamGrantKey(person="carol", server="notes"))
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    assert vault.DeleteGrant(pb.DownstreamGrantKey(person="alice", server="notes")).deleted == 1
    assert vault.DeletePerson(pb.DeleteDownstreamPersonRequest(person="bob")).deleted == 1
    assert vault.ListGrants(pb.ListDownstreamGrantsRequest(person="bob")).grants == []


def test_a_row_moved_to_another_person_does_not_open(
    vault: pb_grpc.DownstreamVaultServiceStub, registry: Registry
) -> None:
    vault.PutGrant(pb.DownstreamGrant(person="alice", server="notes", secret_json=SECRET, expires_at=1))
    vault.PutGrant(pb.DownstreamGrant(person="mallory", server="notes", secret_json="{}", expires_at=1))
    with registry.db.write() as session:
        session.execute(
            text(
                "UPDATE downstream_grants SET ciphertext = (SELECT ciphertext FROM downstream_grants "
                "WHERE person = 'alice') WHERE person = 'mallory'"
            )
        )
    with pytest.raises(grpc.RpcError) as moved:
        vault.GetGrant(pb.DownstreamGrantKey(person="mallory", server="notes"))
    assert moved.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "very-secret" not in str(moved.value.details())


def test_the_key_rotates_new_first_old_kept_then_resealed(registry: Registry, tmp_path: Path) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    before = Vault(registry.db, lambda: load_keys(old, None, None, setting="K", file_name="k"))
    before.put(Grant("alice", "notes", SECRET, 5, True), has_tokens=True)
    both = Vault(registry.db, lambda: load_keys(f"{new},{old}", None, None, setting="K", file_name="k"))
    assert both.get("alice", "notes").secret == SECRET
    assert both.rotate() == 1
    only_new = Vault(registry.db, lambda: load_keys(new, None, None, setting="K", file_name="k"))
    assert only_new.get("alice", "notes").secret == SECRET
    with pytest.raises(KeyMissing, match="not a Fernet key"):
        load_keys("not-a-key", None, None, setting="K", file_name="k")
    created = load_keys("", None, tmp_path, setting="K", file_name="vault.key")
    assert (tmp_path / "vault.key").stat().st_mode & 0o777 == 0o600
    assert created.decrypt(created.encrypt(b"x")) == b"x"
