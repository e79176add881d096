"""Tokens and usage statistics over gRPC."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc

Code = grpc.StatusCode
RpcError = Callable[..., grpc.RpcError]


def test_token_lifecycle(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    created = stub.CreateToken(
        pb.CreateTokenRequest(name="ci", scopes=["jarvis:jarvis_server:list", "read"], expires_in_seconds=3600)
    )
    assert created.secret.startswith("jv_")
    assert created.token.prefix == created.secret[: len(created.token.prefix)]
    assert created.token.expires_at.seconds - created.token.created_at.seconds == 3600
    verified = stub.VerifyToken(pb.VerifyTokenRequest(secret=created.secret))
    assert verified.id == created.token.id
    assert verified.HasField("last_used_at")
    listed = stub.ListTokens(pb.ListTokensRequest()).tokens
    assert [t.id for t in listed] == [created.token.id]
    assert all(created.secret not in str(t) for t in listed)
    revoked = stub.RevokeToken(pb.RevokeTokenRequest(id=created.token.id))
    assert revoked.HasField("revoked_at")
    error = rpc_error(stub.VerifyToken, pb.VerifyTokenRequest(secret=created.secret), Code.UNAUTHENTICATED)
    assert created.secret not in error.details()
    assert "invalid token" in error.details()
    assert list(stub.ListTokens(pb.ListTokensRequest()).tokens) == []
    assert len(stub.ListTokens(pb.ListTokensRequest(include_revoked=True)).tokens) == 1


def test_token_errors(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    error = rpc_error(stub.CreateToken, pb.CreateTokenRequest(name="x", scopes=["jarvis:a:b:c"]), Code.INVALID_ARGUMENT)
    assert "invalid scope 'jarvis:a:b:c'" in error.details()
    assert "<surface>[:<tool>[:<action>]]" in error.details()
    rpc_error(stub.CreateToken, pb.CreateTokenRequest(name="", scopes=["read"]), Code.INVALID_ARGUMENT)
    rpc_error(stub.RevokeToken, pb.RevokeTokenRequest(id="missing"), Code.NOT_FOUND)
    error = rpc_error(stub.VerifyToken, pb.VerifyTokenRequest(secret="jv_guess"), Code.UNAUTHENTICATED)
    assert "jv_guess" not in error.details()


def at(second: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(datetime(2025, 1, 1, 12, 0, second, tzinfo=UTC))
    return stamp


def test_usage_aggregates(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    events = [
        pb.UsageEvent(tool="jarvis_server", action="list", ok=True, latency_ms=10, at=at(1)),
        pb.UsageEvent(tool="jarvis_server", action="list", ok=False, latency_ms=30, at=at(3)),
        pb.UsageEvent(tool="jarvis_server", action="install", ok=True, latency_ms=5, at=at(2)),
        pb.UsageEvent(tool="debug", action="", ok=True, latency_ms=1),
    ]
    assert stub.RecordUsage(pb.RecordUsageRequest(events=events)).recorded == 4
    stub.RecordUsage(
        pb.RecordUsageRequest(
            events=[pb.UsageEvent(tool="jarvis_server", action="list", ok=True, latency_ms=20, at=at(2))]
        )
    )
    stats = {(s.tool, s.action): s for s in stub.GetUsage(pb.GetUsageRequest()).stats}
    assert set(stats) == {("debug", ""), ("jarvis_server", "install"), ("jarvis_server", "list")}
    listed = stats[("jarvis_server", "list")]
    assert (listed.calls, listed.errors, listed.avg_latency_ms, listed.max_latency_ms) == (3, 1, 20.0, 30.0)
    assert listed.last_called_at == at(3)
    only = stub.GetUsage(pb.GetUsageRequest(tool="debug")).stats
    assert [(s.tool, s.calls) for s in only] == [("debug", 1)]
    assert stub.RecordUsage(pb.RecordUsageRequest()).recorded == 0
    error = rpc_error(stub.RecordUsage, pb.RecordUsageRequest(events=[pb.UsageEvent(tool="")]), Code.INVALID_ARGUMENT)
    assert "needs a tool name" in error.details()


def test_concurrent_usage_batches_lose_nothing(stub: pb_grpc.RegistryServiceStub) -> None:
    batch = pb.RecordUsageRequest(events=[pb.UsageEvent(tool="t", action="a", ok=True, latency_ms=1)] * 5)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda _: stub.RecordUsage(batch), range(16)))
    [stat] = stub.GetUsage(pb.GetUsageRequest(tool="t")).stats
    assert stat.calls == 80


def test_audit_log_keeps_calls_that_say_who_pages_filters_and_prunes(stub: pb_grpc.RegistryServiceStub) -> None:
    now = datetime.now(UTC)
    old, recent = Timestamp(), Timestamp()
    old.FromDatetime(now - timedelta(days=40))  # beyond the default 30-day retention
    recent.FromDatetime(now)
    who = {"token_id": "t1", "token_name": "ci-bot", "surface": "jarvis", "outcome": "ok"}
    events = [
        pb.UsageEvent(tool="jarvis_server", action="list", ok=True, latency_ms=3, at=recent, **who),
        pb.UsageEvent(
            tool="jarvis_server",
            action="info",
            ok=True,
            latency_ms=4,
            at=recent,
            target="time",
            arguments_json='{"name":"time"}',
            **who,
        ),
        pb.UsageEvent(
            tool="jarvis_config",
            action="set",
            ok=False,
            latency_ms=0,
            at=recent,
            token_id="t2",
            token_name="other",
            surface="jarvis",
            outcome="denied",
        ),
        pb.UsageEvent(tool="jarvis_server", action="list", ok=True, latency_ms=1, at=old, **who),
        pb.UsageEvent(tool="share:t9", action="request", ok=True, latency_ms=1),
    ]  # a counter, not a call
    assert stub.RecordUsage(pb.RecordUsageRequest(events=events)).recorded == 5
    entries = stub.ListAudit(pb.ListAuditRequest()).entries
    assert [(e.event.tool, e.event.action, e.event.outcome) for e in entries] == [
        ("jarvis_config", "set", "denied"),
        ("jarvis_server", "info", "ok"),
        ("jarvis_server", "list", "ok"),
    ]
    assert entries[1].event.target == "time"
    assert entries[1].event.arguments_json == '{"name":"time"}'
    assert entries[1].event.token_name == "ci-bot"
    assert [e.event.action for e in stub.ListAudit(pb.ListAuditRequest(token="ci-bot")).entries] == ["info", "list"]
    assert [e.event.action for e in stub.ListAudit(pb.ListAuditRequest(token="t2")).entries] == ["set"]
    assert len(stub.ListAudit(pb.ListAuditRequest(tool="jarvis_server")).entries) == 2
    page = stub.ListAudit(pb.ListAuditRequest(limit=1)).entries
    rest = stub.ListAudit(pb.ListAuditRequest(before_id=page[0].id)).entries
    assert [e.id for e in [*page, *rest]] == [e.id for e in entries]
    later = Timestamp()
    later.FromDatetime(now + timedelta(minutes=1))
    assert stub.ListAudit(pb.ListAuditRequest(since=later)).entries == []
    # The counters still count every event, the pruned one too.
    [listed] = [s for s in stub.GetUsage(pb.GetUsageRequest(tool="jarvis_server")).stats if s.action == "list"]
    assert listed.calls == 2
