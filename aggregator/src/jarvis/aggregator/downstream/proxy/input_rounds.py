"""A downstream server's input-required result (2026-07-28) answered for a caller that speaks 2025-11-25.

A 2026-07-28 server asks for what it needs mid-call (an elicitation, a sample of the caller's model, its roots)
by answering the call with `resultType: input_required`, `inputRequests` and an opaque `requestState`; the client
asks, then calls again with `inputResponses` and the state. A 2026-07-28 caller gets that result as the server
sent it and retries itself. A 2025-era caller knows nothing of it: it expects the server to ask by a request on
the call's stream. So for such a caller Jarvis is the 2026 client: it asks the caller each request the classic
way, on the call's own stream, and calls the server again with the answers and `requestState` byte for byte,
round after round, until the result is complete. Each retry is a new request (a new JSON-RPC id); nothing of one
call's rounds is kept for another.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.methods import is_input_required
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from jarvis.aggregator.downstream.transport.relay import Caller
from jarvis.common.errors import FailedPrecondition, JarvisError

# More rounds than any real exchange needs, few enough that a server asking forever ends the call.
MAX_ROUNDS = 10

Retry = Callable[[dict[str, Any], str | None], Awaitable[dict[str, Any]]]


# The client capabilities behind input requests: a 2025-era caller that has one can answer that kind of request.
ASKABLE = ("elicitation", "sampling", "roots")


def relayed_capabilities(caller: Caller | None) -> dict[str, Any]:
    """The capabilities a 2025-era caller's request says it has when it reaches a server in 2026-07-28: those of
    its own that Jarvis can ask it on the server's behalf, so a server that checks them sees the caller's."""
    declared = caller.session.client_capabilities if caller is not None else None
    if declared is None:
        return {}
    dumped = declared.model_dump(by_alias=True, exclude_none=True, mode="json")
    return {key: dumped[key] for key in ASKABLE if key in dumped}


def answers_itself(caller_version: str | None) -> bool:
    """Whether the caller retries an input-required result itself (it speaks 2026-07-28)."""
    return caller_version in MODERN_PROTOCOL_VERSIONS


async def complete_for_legacy_caller(
    result: dict[str, Any], server: str, caller: Caller | None, retry: Retry
) -> dict[str, Any]:
    """`result`, or once it is input-required, the complete result after asking `caller` every round's requests."""
    for _ in range(MAX_ROUNDS):
        if not is_input_required(result):
            return result
        try:
            needed = types.InputRequiredResult.model_validate(result, by_name=False)
        except ValidationError as exc:
            raise JarvisError(
                f"server '{server}' asked for input in an invalid result ({exc.errors()[0]['msg']})"
            ) from None
        answers = {key: await _ask(caller, server, request) for key, request in (needed.input_requests or {}).items()}
        result = await retry(answers, needed.request_state)
    raise FailedPrecondition(
        f"server '{server}' still asked for input after {MAX_ROUNDS} rounds of answers; the call was ended"
    )


async def _ask(caller: Caller | None, server: str, request: types.InputRequest) -> dict[str, Any]:
    """One input request asked of the caller as the 2025-era request it knows; its answer as the server wants it."""
    answer: type[BaseModel]
    if isinstance(request, types.ElicitRequest):
        what, capability, answer = "elicitation", "elicitation", types.ElicitResult
    elif isinstance(request, types.CreateMessageRequest):
        what, capability = "sampling", "sampling"
        answer = types.CreateMessageResultWithTools if request.params.tools else types.CreateMessageResult
    else:
        what, capability, answer = "its roots", "roots", types.ListRootsResult
    if caller is None:
        raise FailedPrecondition(
            f"server '{server}' needs {what} from you to finish this call, and a request outside an MCP session has "
            "no stream to ask on: call the tool in a session, or speak protocol 2026-07-28"
        )
    if not caller.session.can_send_request:
        # Answers stream for such calls once Jarvis knows the server asks in rounds (routes.py); the first call
        # to a server not started yet, or a stateless Jarvis, answers with a body.
        raise FailedPrecondition(
            f"server '{server}' needs {what} from you to finish this call, and this call's answer could not carry "
            "a question: call the tool again (on a stateless Jarvis, speak protocol 2026-07-28 to answer it)"
        )
    if not caller.supports(capability):
        raise FailedPrecondition(
            f"server '{server}' needs {what} from you to finish this call, and your client does not offer the "
            f"'{capability}' capability"
        )
    try:
        given = await caller.ask(request, answer)
    except MCPError as exc:
        raise FailedPrecondition(f"your client refused the {what} that server '{server}' asked for: {exc}") from None
    dumped: dict[str, Any] = given.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped
