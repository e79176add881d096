"""Which proxy-surface requests are answered as a stream: those something may reach before the result."""

from __future__ import annotations

from mcp_types import LOG_LEVEL_META_KEY

from jarvis.aggregator.downstream.proxy.answer_mode import answer_as_json


def _request(method: str, meta: dict[str, object] | None = None) -> dict[str, object]:
    params: dict[str, object] = {"name": "alpha__echo"} if method == "tools/call" else {}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def test_a_tool_call_that_asks_for_progress_or_log_messages_streams() -> None:
    assert answer_as_json("POST", [_request("tools/call")])
    assert not answer_as_json("POST", [_request("tools/call", {"progressToken": 7})])
    assert not answer_as_json("POST", [_request("tools/call", {LOG_LEVEL_META_KEY: "info"})])


def test_other_requests_that_name_a_log_level_keep_a_json_body() -> None:
    """Log messages are relayed for tool calls only (relay.py), so a stream would carry nothing more."""
    for method in ("tools/list", "resources/read", "prompts/get"):
        assert answer_as_json("POST", [_request(method, {LOG_LEVEL_META_KEY: "info"})]), method


def test_openings_listens_batches_and_other_verbs_stream() -> None:
    assert not answer_as_json("POST", [_request("initialize")])
    assert not answer_as_json("POST", [_request("subscriptions/listen")])
    assert not answer_as_json("POST", [_request("tools/call"), _request("tools/call", {"progressToken": 1})])
    assert not answer_as_json("GET", [_request("tools/call")])
    assert not answer_as_json("POST", [])
