"""The call pipeline (decision 0065): route → policies → backend, the same for every door.

Each door (the SDK's handler, the direct path, `tool_call`, `code_run`, a profile or share) builds a `ToolCall`,
resolves its name to a `Route`, and runs both through `CallPipeline.run`. The policies are small steps run once, in
one order: scope, rate and concurrency, withheld tools (quarantine, SEP-2243), a person's consent. Around them the
pipeline writes the call's one record (audit, usage, metrics) and turns every refusal or failure into the same tool
error, whatever the door.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, Protocol

from mcp.shared.exceptions import MCPError
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode
from prometheus_client import CollectorRegistry

from jarvis.aggregator.calls.call import Refused, Result, ToolCall, is_error
from jarvis.aggregator.calls.record import CallRecorder
from jarvis.aggregator.calls.routes import Proceed, Route
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.ratelimit import RateLimiter
from jarvis.aggregator.tooling.request import text_result
from jarvis.aggregator.usage import UsageRecorder
from jarvis.common import tracing
from jarvis.common.errors import JarvisError, PermissionDenied

log = logging.getLogger(__name__)


class Step(Protocol):
    name: str  # what its span is called

    async def __call__(self, call: ToolCall, route: Route, proceed: Proceed) -> Result: ...


class Scope:
    """The caller's scopes allow this call."""

    name = "scope"

    async def __call__(self, call: ToolCall, route: Route, proceed: Proceed) -> Result:
        denial = route.denial(call.principal)
        if denial is not None:
            raise Refused("denied", denial)
        return await proceed(call)


class RateLimit:
    """No call over its token's rate for the tool, nor over its cap of calls in flight (the local user is not
    limited). One bucket per token and tool, whichever door reached it; a call the gate already took is not taken
    again (the gate counts it in flight for the whole request)."""

    name = "rate limit"

    def __init__(self, limiter: RateLimiter | None) -> None:
        self.limiter = limiter

    async def __call__(self, call: ToolCall, route: Route, proceed: Proceed) -> Result:
        limiter, principal = self.limiter, call.principal
        if limiter is None or call.gated or principal.local:
            return await proceed(call)
        limited = limiter.check(principal.token_id, call.surface, route.limit_key)
        if limited is not None:
            raise Refused("rate_limited", limited.message)
        with limiter.running([(principal.token_id, route.limit_key)]):
            return await proceed(call)


class Withheld:
    """No call of a tool nobody may call now: quarantined until an admin approves it, or one whose declared
    headers a client must not send (SEP-2243)."""

    name = "withheld"

    async def __call__(self, call: ToolCall, route: Route, proceed: Proceed) -> Result:
        why = route.withheld()
        if why is not None:
            raise Refused("withheld", why)
        return await proceed(call)


class Consent:
    """A server on each person's own account runs the call on theirs: where they have not authorized it yet, the
    caller is asked (a URL elicitation, or an input-required round) and the call goes on once they have; a caller
    that cannot be asked gets the link. The route's backend knows how (downstream/auth/ask.py)."""

    name = "consent"

    async def __call__(self, call: ToolCall, route: Route, proceed: Proceed) -> Result:
        asker = route.consent()
        if asker is None:
            return await proceed(call)
        return await asker.ask(call, proceed)


def default_steps(limiter: RateLimiter | None) -> tuple[Step, ...]:
    """The policies, in their one order: who may (scope), how often (rate), what nobody may (withheld), and the
    person's own authorization last, since asking for it is the only step that makes the caller wait."""
    return (Scope(), RateLimit(limiter), Withheld(), Consent())


class CallPipeline:
    """Runs a routed call through `steps` to its backend, and records it once. Where traces are on, the call is a
    span with a child for each step that took time or refused, and one for the backend (its arguments only by name,
    never their values)."""

    def __init__(self, recorder: CallRecorder, steps: Sequence[Step]) -> None:
        self.recorder = recorder
        self.steps = tuple(steps)

    async def run(self, call: ToolCall, route: Route) -> Result:
        if not tracing.enabled():  # off: not even an empty span's cost on every call
            return await self._run(call, route, trace.INVALID_SPAN)
        with tracing.span(f"call {route.tool}", attributes=_attributes(call, route)) as span:
            return await self._run(call, route, span)

    async def _run(self, call: ToolCall, route: Route, span: trace.Span) -> Result:
        started, outcome = time.perf_counter(), "internal"
        try:
            result = await self._through(call, route)
            outcome = "error" if is_error(result) else "ok"
            return result
        except Refused as refused:
            outcome = refused.outcome
            return text_result(str(refused), is_error=True)
        except PermissionDenied as exc:
            outcome = "denied"
            return text_result(str(exc), is_error=True)
        except MCPError:  # a server's JSON-RPC error: the door passes it on as such (a profile is transparent)
            outcome = "error"
            raise
        except JarvisError as exc:
            outcome = "error"
            return text_result(str(exc), is_error=True)
        except Exception:
            log.exception("tool call failed", extra={"surface": call.surface, "tool": route.tool})
            return text_result(f"internal error in {route.tool}; the aggregator log has the details", is_error=True)
        finally:
            self.recorder.record(
                call.principal,
                call.surface,
                route.tool,
                action=route.action,
                server=route.server,
                arguments=call.arguments,
                schema=route.schema,
                outcome=outcome,
                elapsed=time.perf_counter() - started,
            )
            span.set_attribute("jarvis.outcome", outcome)
            if outcome != "ok":  # the outcome is the reason: a refusal's text may carry a consent link
                span.set_status(StatusCode.ERROR, outcome)

    async def _through(self, call: ToolCall, route: Route) -> Result:
        # Only a call whose span is kept (sampled) times its steps: a dropped one's would be dropped too.
        traced = tracing.linked() is not None
        proceed: Proceed = _backend(route) if traced else route.send
        for step in reversed(self.steps):
            proceed = _bound(step, route, proceed, traced)
        return await proceed(call)


def _attributes(call: ToolCall, route: Route) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.tool.name": call.name,
        "jarvis.surface": call.surface,
        "jarvis.backend": route.backend,
        "jarvis.arguments": sorted(call.arguments),  # their names only
    }
    if route.server:
        attributes["jarvis.downstream.server"] = route.server
    return attributes


def _backend(route: Route) -> Proceed:
    async def send(call: ToolCall) -> Result:
        name = f"backend {route.server or route.backend}"
        with tracing.span(name, SpanKind.CLIENT if route.server else SpanKind.INTERNAL):
            return await route.send(call)

    return send


def _bound(step: Step, route: Route, proceed: Proceed, traced: bool) -> Proceed:
    if traced:

        async def timed_step(call: ToolCall) -> Result:
            timed = _TimedStep(step.name)
            try:
                return await step(call, route, timed.around(proceed))
            except Exception as exc:
                timed.failed(exc)
                raise
            finally:
                timed.end()

        return timed_step

    async def run(call: ToolCall) -> Result:
        return await step(call, route, proceed)

    return run


# A step whose own work (not the rest of the chain it runs) took less gets no span (decision 0072): scope, withheld
# and a rate limit not reached are checks of microseconds, and their spans cost as much as a consent wait's.
STEP_SPAN_NS = 1_000_000


class _TimedStep:
    """One run of a step, traced where it took time of its own or ended the call. Its span begins when the step
    began but is opened only once that is known, and is current for the rest of the chain it runs after (the backend
    of a call that waited for consent is the consent's child)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.began = time.time_ns()
        self.inside = 0  # ns spent in the rest of the chain
        self.passed_on: BaseException | None = None  # what the rest of the chain raised, not this step
        self.span: trace.Span | None = None

    def around(self, proceed: Proceed) -> Proceed:
        async def rest(call: ToolCall) -> Result:
            self._open_if_slow()
            entered = time.time_ns()
            try:
                if self.span is None:
                    return await proceed(call)
                with trace.use_span(self.span, record_exception=False, set_status_on_exception=False):
                    return await proceed(call)
            except BaseException as exc:
                self.passed_on = exc
                raise
            finally:
                self.inside += time.time_ns() - entered

        return rest

    def failed(self, exc: Exception) -> None:
        """Which step refused a call is what its trace is read for: that step has a span, whatever its time. Its
        status is the outcome, not the refusal's text, which may carry a consent link."""
        if exc is not self.passed_on:
            self._open().set_status(StatusCode.ERROR, _outcome(exc))

    def end(self) -> None:
        self._open_if_slow()
        if self.span is not None:
            self.span.end()

    def _open_if_slow(self) -> None:
        if time.time_ns() - self.began - self.inside >= STEP_SPAN_NS:
            self._open()

    def _open(self) -> trace.Span:
        if self.span is None:
            self.span = tracing.opened(self.name, self.began)
        return self.span


def _outcome(exc: Exception) -> str:
    if isinstance(exc, Refused):
        return exc.outcome
    return "denied" if isinstance(exc, PermissionDenied) else "error"


def unlimited(usage: UsageRecorder) -> CallPipeline:
    """A pipeline without rate limits, counting into a metrics registry of its own: for a context built without the
    aggregator's (a test, a tool)."""
    return CallPipeline(CallRecorder(usage, AggregatorMetrics(CollectorRegistry())), default_steps(None))
