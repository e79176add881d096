"""A 2025-era server's result, relayed to a 2026-07-28 caller, is one the SDK serves in the caller's version."""

from __future__ import annotations

from mcp_types.methods import serialize_server_result

from jarvis.aggregator.downstream.proxy.versions import for_caller

LEGACY_RESULT = {"content": [{"type": "text", "text": "hi"}], "isError": False}


def test_a_legacy_result_is_complete_for_a_modern_caller() -> None:
    relayed = for_caller(LEGACY_RESULT, "2026-07-28")
    assert relayed["resultType"] == "complete"
    assert serialize_server_result("tools/call", "2026-07-28", relayed)["content"] == LEGACY_RESULT["content"]


def test_what_the_server_said_is_kept_and_legacy_callers_get_it_untouched() -> None:
    interim = {"resultType": "input_required", "requestState": "opaque"}
    assert for_caller(interim, "2026-07-28") == interim  # never turned into a complete result
    assert for_caller(LEGACY_RESULT, "2025-11-25") is LEGACY_RESULT
    assert for_caller(LEGACY_RESULT, None) is LEGACY_RESULT
