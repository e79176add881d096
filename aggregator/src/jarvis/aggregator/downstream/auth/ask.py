"""What a person's call that needs their authorization answers (issue 32 item 2).

A 2025-era caller that takes URL-mode elicitations is sent one with the consent link, on the call's own stream;
once they accept, the call waits for the consent to finish (up to `consent_seconds`) and is sent again (and asks
again, for the union of scopes, when the server then wants more: a step-up). A 2026-07-28 caller that takes them
gets an input-required result asking the same elicitation, with a request state naming the consent; its retry with
the answer waits for the consent the same way and is then sent to the server (without Jarvis's answer and state,
which are no business of the server's). Any other caller (or one that declines) gets a tool error carrying the link
and what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from jarvis.aggregator.calls.call import Refused, Result, ToolCall
from jarvis.aggregator.calls.routes import Proceed
from jarvis.aggregator.downstream.auth.consent import Consents, Flow, NeedsConsent
from jarvis.aggregator.downstream.auth.guard import OAuthClientSettings
from jarvis.aggregator.downstream.auth.person import person_of
from jarvis.aggregator.downstream.auth.relay import ConsentRelay
from jarvis.aggregator.downstream.transport.relay import Caller

log = logging.getLogger(__name__)


# The key of Jarvis's own input request, and the prefix of its request state (followed by how many times the call
# asked, ":" and the consent's id): a retry carrying such a state answers Jarvis, not the server.
CONSENT_INPUT = "jarvis_consent"
CONSENT_STATE = "jarvis-consent:"

# A call asks its caller for at most this many consents: the first, then one per step-up (a retry answered 403
# insufficient_scope for a wider scope). A server that keeps asking for more after each is not asked for again (the
# spec's retry limit): the caller gets the last link in a tool error.
ASKS_PER_CALL = 3


def _consent_message(server: str) -> str:
    return f"Server '{server}' needs your authorization with your own account."


def takes_url_elicitation_in_rounds(meta: Any) -> bool:
    """Whether a 2026-07-28 request's declared capabilities (in its `_meta`) take URL-mode elicitations."""
    declared = meta.get(types.CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    elicitation = declared.get("elicitation") if isinstance(declared, dict) else None
    return isinstance(elicitation, dict) and isinstance(elicitation.get("url"), dict)


def consent_input_required(needed: NeedsConsent, asked: int = 1) -> dict[str, Any]:
    """The input-required result (2026-07-28) asking the caller to open the consent link, the call's `asked`th."""
    ask = types.ElicitRequest(
        params=types.ElicitRequestURLParams(
            message=_consent_message(needed.server), url=needed.link, elicitation_id=needed.flow.id
        )
    )
    result = types.InputRequiredResult(
        input_requests={CONSENT_INPUT: ask}, request_state=f"{CONSENT_STATE}{asked}:{needed.flow.id}"
    )
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")


@dataclass(frozen=True)
class ConsentAnswer:
    """A 2026-07-28 retry's answer to Jarvis's consent request."""

    flow_id: str
    accepted: bool
    asked: int  # the consents the call asked for so far, this one included


def take_consent_answer(params: dict[str, Any]) -> ConsentAnswer | None:
    """The answer a retry gives to Jarvis's consent request, taken out of `params` (the request sent on to the
    server); None, and `params` untouched, for any other request (a server's own rounds included)."""
    state = params.get("requestState")
    if not isinstance(state, str) or not state.startswith(CONSENT_STATE):
        return None
    params.pop("requestState")
    responses = params.pop("inputResponses", None)
    answer = responses.get(CONSENT_INPUT) if isinstance(responses, dict) else None
    accepted = isinstance(answer, dict) and answer.get("action") == "accept"
    asked, _, flow_id = state.removeprefix(CONSENT_STATE).partition(":")
    # A state not of Jarvis's making counts as the last ask: the call asks no more.
    return ConsentAnswer(flow_id, accepted, int(asked) if asked.isdigit() else ASKS_PER_CALL)


async def wait_for_consent(flow: Flow | None, wait_seconds: float) -> None:
    """Wait (up to `wait_seconds`) for a consent the caller accepted to finish; the call is then sent either way,
    and asks again if the person is still not connected."""
    if flow is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(flow.done.wait(), wait_seconds)


def takes_url_elicitation(caller: Caller | None) -> bool:
    if caller is None:
        return False
    declared = caller.session.client_capabilities
    elicitation = declared.elicitation if declared is not None else None
    return elicitation is not None and elicitation.url is not None


async def consent_then_retry(
    needed: NeedsConsent,
    caller: Caller | None,
    retry: Callable[[], Awaitable[dict[str, Any]]],
    wait_seconds: float,
) -> dict[str, Any]:
    """The retried call's result once the person consented through a URL elicitation, asked again (for the union of
    scopes) when the retry meets a step-up; NeedsConsent, the last one, when they could not be asked that way (or
    declined, or did not finish in time, or were asked ASKS_PER_CALL times): the caller answers it as a tool error."""
    for _ in range(ASKS_PER_CALL):
        if not await _consented(needed, caller, wait_seconds):
            break
        try:
            return await retry()
        except NeedsConsent as again:  # the server wants more than the person granted: a new consent, the union
            needed = again
    raise needed


async def _consented(needed: NeedsConsent, caller: Caller | None, wait_seconds: float) -> bool:
    """Whether the person, asked with a URL elicitation, accepted and finished the consent in time."""
    if not takes_url_elicitation(caller):
        return False
    assert caller is not None
    request = types.ElicitRequest(
        params=types.ElicitRequestURLParams(
            message=_consent_message(needed.server), url=needed.link, elicitation_id=needed.flow.id
        )
    )
    try:
        answer = await caller.ask(request, types.ElicitResult)
    except Exception as exc:  # a caller that cannot take it after all: the link goes in the tool error
        log.debug("URL elicitation for server %s not taken: %s", needed.server, type(exc).__name__)
        return False
    if answer.action != "accept":
        return False
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(needed.flow.done.wait(), wait_seconds)
    return needed.flow.connected


class Personal(Protocol):
    """What asking needs of the host's per-person servers: their consents, how long a call may wait for one, and
    the relay to the processes holding consents begun there (None with one process)."""

    consents: Consents | None
    settings: OAuthClientSettings
    relay: ConsentRelay | None


@dataclass(frozen=True)
class ConsentAsking:
    """One call of `person` to `server`, and how its caller is asked for a consent the server needs: `modern` for a
    2026-07-28 caller (an input request; `meta` holds its declared capabilities), else on the call's stream."""

    personal: Personal
    person: str
    server: str
    modern: bool
    caller: Caller | None
    meta: Any

    async def send(self, send: Callable[[], Awaitable[dict[str, Any]]], request: dict[str, Any]) -> dict[str, Any]:
        """`send()`'s result; where the person must authorize first, the round that asks them (or, once they did,
        the result after all); NeedsConsent (a tool error with the link) where they cannot be asked or declined.
        `request` is what `send` sends: a retry's answer to Jarvis's own round is taken out of it first."""
        wait = self.personal.settings.consent_seconds
        answered = take_consent_answer(request) if self.modern else None
        consents = self.personal.consents
        if answered is not None and answered.accepted and consents is not None:
            await self._wait_for(consents, answered.flow_id, wait)
        try:
            return await send()
        except NeedsConsent as needed:
            if self.modern:
                declined = answered is not None and not answered.accepted
                asked = answered.asked if answered is not None else 0
                if declined or asked >= ASKS_PER_CALL or not takes_url_elicitation_in_rounds(self.meta):
                    raise
                return consent_input_required(needed, asked + 1)  # the caller asks the person and retries
            return await consent_then_retry(needed, self.caller, send, wait)

    async def _wait_for(self, consents: Consents, flow_id: str, wait: float) -> None:
        """Wait for the consent a retry answered, here or, where the retry reached another process than the one the
        caller was asked from (several workers, replicas), in the process holding it."""
        flow = consents.flow(flow_id, self.person, self.server)
        if flow is not None:
            await wait_for_consent(flow, wait)
        elif self.personal.relay is not None:  # a 2026-07-28 retry may reach a process that does not hold its consent
            await self.personal.relay.wait_for(flow_id, self.person, self.server, wait)


@dataclass(frozen=True)
class PersonConsent:
    """The call pipeline's consent step for `server`, a server each person connects to with their own account."""

    personal: Personal
    server: str

    async def ask(self, call: ToolCall, proceed: Proceed) -> Result:
        params = call.sent()  # a retry's answer to Jarvis's own round is taken out of it before it is sent
        modern = call.protocol_version in MODERN_PROTOCOL_VERSIONS
        asking = ConsentAsking(self.personal, person_of(call.principal), self.server, modern, call.caller, call.meta)

        async def send() -> dict[str, Any]:
            return cast(dict[str, Any], await proceed(dataclasses.replace(call, params=params)))

        if self.personal.consents is not None:  # where traced, a call that continues a consent links to its asking
            await self.personal.consents.continued(asking.person, self.server)
        try:
            return await asking.send(send, params)
        except NeedsConsent as needed:
            raise Refused("needs_consent", str(needed)) from None
