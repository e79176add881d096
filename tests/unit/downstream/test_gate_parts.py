"""The gate's parts that need no server: nesting bounds, sessions, rate limits, scope names, audit redaction."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from jarvis.aggregator.audit import redact, target_of
from jarvis.aggregator.jsonrpc import BodyTooDeep, json_rpc_messages, nesting_depth
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.ratelimit import Limit, RateLimiter
from jarvis.aggregator.sessions import SessionLedger
from jarvis.common import scopes


def test_nesting_is_bounded_without_recursing() -> None:
    assert nesting_depth(b"[" * 100_000) == 100_000
    assert nesting_depth(b'{"a": "[[[[{{{{", "b": [1, [2]]}') == 3
    assert nesting_depth(b'["\\"[[[["]') == 1  # an escaped quote does not end the string
    with pytest.raises(BodyTooDeep, match="deeper than 64"):
        json_rpc_messages(b"[" * 65 + b"]" * 65)
    assert len(json_rpc_messages(b"[" * 64 + b"]" * 64)) == 1
    many_strings = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"t": "[" * 5000}}).encode()
    assert json_rpc_messages(many_strings)[0]["id"] == 1
    assert json_rpc_messages(b"\xff\xfe") == []


def test_a_ledger_forgets_a_session_when_it_ends_and_caps_each_token() -> None:
    ledger = SessionLedger(max_per_token=2)
    for n in range(10):  # churn never fills anything
        ledger.opened(f"s{n}", "a")
        ledger.ended(f"s{n}")
        ledger.ended(f"s{n}")  # the SDK may discard a session twice
    assert len(ledger) == 0
    ledger.opened("live1", "a")
    ledger.opened("live2", "a")
    assert ledger.at_limit("a")
    assert not ledger.at_limit("b")
    assert ledger.owner("live1") == "a"
    ledger.ended("live1")
    assert not ledger.at_limit("a")
    assert ledger.owner("live1") is None
    assert ledger.owner("live2") == "a"
    assert not SessionLedger(max_per_token=0).at_limit("a")


def test_rate_limiter_refills_keys_per_token_and_tool_and_caps_in_flight() -> None:
    metrics = AggregatorMetrics(CollectorRegistry())
    limiter = RateLimiter(Limit(per_second=10, burst=2, concurrent=1), {"free": Limit()}, metrics.rate_limited)
    assert limiter.check("a", "jarvis", "t") is None
    assert limiter.check("a", "jarvis", "t") is None
    refused = limiter.check("a", "jarvis", "t")
    assert refused is not None
    assert refused.reason == "rate"
    assert 0 < refused.retry_after <= 0.1
    assert limiter.check("b", "jarvis", "t") is None  # another token
    assert limiter.check("a", "jarvis", "u") is None  # another tool
    assert all(limiter.check("a", "jarvis", "free") is None for _ in range(100))
    time.sleep(0.11)
    assert limiter.check("a", "jarvis", "t") is None
    with limiter.running([("c", "t")]):
        busy = limiter.check("c", "jarvis", "t")
        assert busy is not None
        assert busy.reason == "concurrency"
    assert limiter.check("c", "jarvis", "t") is None
    assert metrics.rate_limited.labels("jarvis", "rate")._value.get() == 1


def test_a_tool_has_one_bucket_and_one_pool_per_token_whichever_surface_reaches_it() -> None:
    """Issue 34 #8: keys held the surface, so /mcp's tool_call was a second bucket and a second pool."""
    metrics = AggregatorMetrics(CollectorRegistry())
    limiter = RateLimiter(Limit(), {"t": Limit(per_second=0.01, burst=1, concurrent=1)}, metrics.rate_limited)
    assert limiter.check("a", "profile", "t") is None
    refused = limiter.check("a", "discovery", "t")
    assert refused is not None
    assert refused.reason == "rate"
    with limiter.running([("b", "t")]):
        busy = limiter.check("b", "discovery", "t")
        assert busy is not None
        assert busy.reason == "concurrency"
    assert metrics.rate_limited.labels("discovery", "concurrency")._value.get() == 1


def test_refusals_name_the_scopes_that_would_allow_the_call() -> None:
    assert scopes.granting("jarvis", "jarvis_server", "uninstall", read_only=False) == [
        "jarvis:jarvis_server:uninstall",
        "jarvis:jarvis_server",
        "jarvis",
        "admin",
    ]
    assert scopes.granting("jarvis", "jarvis_server", "create", read_only=False, admin=True) == ["admin"]
    named = scopes.granting("orchestrator", "project", "get", read_only=True, project="p1")
    assert named[0] == "orchestrator:project:get@p1"
    assert "read@p1" in named
    for scope in named[:-1]:
        assert scopes.allows([scope], "orchestrator", "project", "get", read_only=True, project="p1")


def test_audit_keeps_only_known_non_secret_scalar_arguments() -> None:
    schema: dict[str, Any] = {
        "properties": {
            "name": {},
            "env": {},
            "api_key": {},
            "args": {},
            "limit": {},
            "text": {},
            "config": {},
            "access_token": {},
        }
    }
    kept = redact(
        {
            "name": "time",
            "env": {"A": "s"},
            "api_key": "s",
            "args": ["--password", "s"],
            "limit": 3,
            "text": "x" * 500,
            "config": {"a": 1},
            "access_token": "s",
            "unknown": "s",
        },
        schema,
    )
    assert kept == {
        "name": "time",
        "env": "[redacted]",
        "api_key": "[redacted]",
        "args": "[list of 2 items]",
        "limit": 3,
        "text": "x" * 200 + "…",
        "config": "[object of 1 fields]",
        "access_token": "[redacted]",
    }
    assert redact({"name": "x"}, None) == {}
    assert target_of(kept) == "time"


def test_a_response_after_its_session_ended_does_not_bring_the_owner_back() -> None:
    ledger = SessionLedger(max_per_token=1)
    ledger.opened("s", "a")
    ledger.ended("s")
    ledger.opened("s", "a")  # a late response of a request that was in flight
    assert ledger.owner("s") is None
    assert not ledger.at_limit("a")


def test_audit_keeps_no_field_but_the_target_of_a_secret_action() -> None:
    """`project action=secret_set` carries the secret in `value`, a name no rule marks as secret."""
    schema: dict[str, Any] = {"properties": {n: {} for n in ("action", "project_id", "name", "value", "limit")}}
    kept = redact(
        {
            "action": "secret_set",
            "project_id": "p1",
            "name": "ANTHROPIC_API_KEY",
            "value": "sk-ant-0123456789",
            "limit": 3,
        },
        schema,
    )
    assert kept == {
        "action": "secret_set",
        "project_id": "p1",
        "name": "ANTHROPIC_API_KEY",
        "value": "[redacted]",
        "limit": "[redacted]",
    }
    assert redact({"action": "create", "value": "plain"}, schema) == {"action": "create", "value": "plain"}
