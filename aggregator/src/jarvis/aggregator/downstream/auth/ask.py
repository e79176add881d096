"""What a person's call that needs their authorization answers (issue 32 item 2).

A caller that takes URL-mode elicitations (2025-11-25) is sent one with the consent link, on the call's own stream;
once they accept, the call waits for the consent to finish (up to `consent_seconds`) and is sent again. Any other
caller (or one that declines) gets a tool error carrying the link and what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types

from jarvis.aggregator.downstream.auth.consent import NeedsConsent
from jarvis.aggregator.downstream.transport.relay import Caller

log = logging.getLogger(__name__)


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
) -> dict[str, Any] | None:
    """The retried call's result once the person consented through a URL elicitation; None when they could not be
    asked that way (or declined, or did not finish in time): the caller then answers `needed` as a tool error."""
    if not takes_url_elicitation(caller):
        return None
    assert caller is not None
    message = f"Server '{needed.server}' needs your authorization with your own account."
    request = types.ElicitRequest(
        params=types.ElicitRequestURLParams(message=message, url=needed.link, elicitation_id=needed.flow.id)
    )
    try:
        answer = await caller.ask(request, types.ElicitResult)
    except Exception as exc:  # a caller that cannot take it after all: the link goes in the tool error
        log.debug("URL elicitation for server %s not taken: %s", needed.server, type(exc).__name__)
        return None
    if answer.action != "accept":
        return None
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(needed.flow.done.wait(), wait_seconds)
    if not needed.flow.connected:
        return None
    return await retry()
