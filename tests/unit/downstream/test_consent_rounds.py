"""Jarvis's own consent round for a 2026-07-28 caller (downstream/auth/ask.py): what it asks, and how a retry's
answer to it is told from a server's own rounds and taken out before the call goes on to the server."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from jarvis.aggregator.downstream.auth.ask import (
    ASKS_PER_CALL,
    CONSENT_INPUT,
    consent_input_required,
    take_consent_answer,
    takes_url_elicitation_in_rounds,
)
from jarvis.aggregator.downstream.auth.consent import Flow, NeedsConsent

pytestmark = pytest.mark.anyio


async def test_the_round_asks_the_link_in_url_mode_and_names_the_consent() -> None:
    # async: a Flow holds asyncio events and a future of the running loop
    flow = Flow(id="f1", person="gina", server="notes", base_url="http://127.0.0.1:1")
    needed = NeedsConsent("notes", "http://127.0.0.1:1/oauth/downstream/start?flow=f1", flow)
    result = types.InputRequiredResult.model_validate(consent_input_required(needed), by_name=False)
    ask = (result.input_requests or {})[CONSENT_INPUT]
    assert isinstance(ask, types.ElicitRequest)
    assert isinstance(ask.params, types.ElicitRequestURLParams)
    assert ask.params.url == needed.link
    assert ask.params.elicitation_id == "f1"
    retry: dict[str, Any] = {
        "name": "whoami",
        "arguments": {},
        "inputResponses": {CONSENT_INPUT: {"action": "accept"}},
        "requestState": result.request_state,
    }
    answer = take_consent_answer(retry)
    assert answer is not None
    assert answer.flow_id == "f1"
    assert answer.accepted
    assert answer.asked == 1
    assert retry == {"name": "whoami", "arguments": {}}  # nothing of Jarvis's round reaches the server


async def test_the_round_counts_the_calls_asks() -> None:
    """A step-up's round is the call's second ask, and its answer says so: the call stops asking after the last."""
    flow = Flow(id="f3", person="gina", server="notes", base_url="http://127.0.0.1:1")
    needed = NeedsConsent("notes", "http://127.0.0.1:1/oauth/downstream/start?flow=f3", flow)
    round_ = consent_input_required(needed, asked=ASKS_PER_CALL)
    retry = {"inputResponses": {CONSENT_INPUT: {"action": "accept"}}, "requestState": round_["requestState"]}
    answer = take_consent_answer(retry)
    assert answer is not None
    assert (answer.flow_id, answer.asked) == ("f3", ASKS_PER_CALL)
    forged = take_consent_answer({"requestState": "jarvis-consent:f3"})
    assert forged is not None
    assert forged.asked == ASKS_PER_CALL  # a state Jarvis did not make asks no more


def test_a_decline_and_a_servers_own_round_are_told_apart() -> None:
    declined = {"inputResponses": {CONSENT_INPUT: {"action": "decline"}}, "requestState": "jarvis-consent:1:f2"}
    answer = take_consent_answer(declined)
    assert answer is not None
    assert not answer.accepted
    own = {"name": "t", "inputResponses": {"ask": {"action": "accept"}}, "requestState": "server-state"}
    assert take_consent_answer(own) is None
    assert own["requestState"] == "server-state"
    assert "inputResponses" in own


def test_only_a_declared_url_capability_counts() -> None:
    key = types.CLIENT_CAPABILITIES_META_KEY
    assert takes_url_elicitation_in_rounds({key: {"elicitation": {"url": {}}}})
    assert not takes_url_elicitation_in_rounds({key: {"elicitation": {"form": {}}}})
    assert not takes_url_elicitation_in_rounds({})
