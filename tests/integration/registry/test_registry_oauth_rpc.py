"""OAuthStateService over a real gRPC server on port 0 (SQLite and PostgreSQL): records put and read, a code taken
once (the replay is told apart), a grant family revoked, expiry, listing by kind, and refusals of bad input."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from jarvis.api.registry.v1 import oauth_pb2 as pb
from jarvis.api.registry.v1 import oauth_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import create_server
from jarvis.registry.app import Registry
from jarvis.registry.server import registry_bindings


@pytest.fixture
def oauth(registry: Registry, tmp_path: Path) -> Iterator[pb_grpc.OAuthStateServiceStub]:
    running = create_server(registry_bindings(registry, [tmp_path]), "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{running.port}")
    yield pb_grpc.OAuthStateServiceStub(channel)
    channel.close()
    running.stop(0)


def key(kind: str, name: str) -> pb.OAuthRecordKey:
    return pb.OAuthRecordKey(kind=kind, key=name)


def test_a_code_is_taken_once_and_its_family_revoked(oauth: pb_grpc.OAuthStateServiceStub) -> None:
    later = int(time.time()) + 60
    oauth.PutRecord(pb.OAuthRecord(kind="code", key="h1", family="f1", body_json='{"a": 1}', expires_at=later))
    oauth.PutRecord(pb.OAuthRecord(kind="refresh", key="r1", family="f1", body_json="{}", expires_at=later))
    first = oauth.TakeRecord(key("code", "h1"))
    assert first.first
    assert first.record.body_json == '{"a": 1}'
    assert first.record.consumed
    replay = oauth.TakeRecord(key("code", "h1"))
    assert not replay.first
    assert oauth.RevokeFamily(pb.RevokeOAuthFamilyRequest(family="f1")).revoked == 2
    for kind, name in (("code", "h1"), ("refresh", "r1")):
        with pytest.raises(grpc.RpcError) as err:
            oauth.GetRecord(key(kind, name))
        assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_a_token_issued_into_a_revoked_family_is_born_revoked(oauth: pb_grpc.OAuthStateServiceStub) -> None:
    """Issue 44, finding 9: a code sent twice at once; the replay revokes the family while the winner is still issuing,
    and the winner's refresh token, stored after the revocation, must not work."""
    later = int(time.time()) + 60
    oauth.PutRecord(pb.OAuthRecord(kind="code", key="h2", family="f2", body_json="{}", expires_at=later))
    assert oauth.TakeRecord(key("code", "h2")).first  # the winner
    assert not oauth.TakeRecord(key("code", "h2")).first  # the replay, which revokes:
    oauth.RevokeFamily(pb.RevokeOAuthFamilyRequest(family="f2"))
    oauth.PutRecord(pb.OAuthRecord(kind="refresh", key="r2", family="f2", body_json="{}", expires_at=later))
    with pytest.raises(grpc.RpcError) as err:
        oauth.GetRecord(key("refresh", "r2"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    oauth.PutRecord(pb.OAuthRecord(kind="refresh", key="r3", family="f3", body_json="{}", expires_at=later))
    assert oauth.GetRecord(key("refresh", "r3")).key == "r3"  # another family is untouched


def test_expired_records_are_gone_and_lists_hold_live_ones(oauth: pb_grpc.OAuthStateServiceStub) -> None:
    oauth.PutRecord(pb.OAuthRecord(kind="pending", key="old", body_json="{}", expires_at=int(time.time()) - 1))
    with pytest.raises(grpc.RpcError) as err:
        oauth.TakeRecord(key("pending", "old"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    oauth.PutRecord(pb.OAuthRecord(kind="role", key="dev", body_json='{"scopes": ["jarvis"]}'))
    oauth.PutRecord(pb.OAuthRecord(kind="role", key="ops", body_json="{}"))
    assert [r.key for r in oauth.ListRecords(pb.ListOAuthRecordsRequest(kind="role")).records] == ["dev", "ops"]
    assert oauth.DeleteRecord(key("role", "ops")).deleted
    assert [r.key for r in oauth.ListRecords(pb.ListOAuthRecordsRequest(kind="role")).records] == ["dev"]


def test_bad_input_is_refused_saying_what_to_send(oauth: pb_grpc.OAuthStateServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as err:
        oauth.PutRecord(pb.OAuthRecord(kind="secret", key="x", body_json="{}"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "kind" in (err.value.details() or "")
    with pytest.raises(grpc.RpcError) as err:
        oauth.GetRecord(key("client", ""))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_expired_records_are_pruned(registry: Registry) -> None:
    from jarvis.registry.domain.oauth_records import OAuthRecord

    registry.oauth.put(OAuthRecord("code", "gone", "f", "{}", int(time.time()) - 10))
    registry.oauth.put(OAuthRecord("code", "kept", "f", "{}", int(time.time()) + 60))
    registry.oauth.put(OAuthRecord("role", "forever", "", "{}", 0))
    assert registry.oauth.prune() == 1
    assert registry.oauth.get("code", "kept").key == "kept"
    assert registry.oauth.get("role", "forever").key == "forever"
