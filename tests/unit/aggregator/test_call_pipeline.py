"""The call pipeline's chain (decision 0065): every case is decided by exactly one policy step, each call leaves one
record and one count, and taking any one step out of the chain changes what some case answers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import pytest
from prometheus_client import CollectorRegistry

from jarvis.aggregator.calls.call import Refused, Result, ToolCall
from jarvis.aggregator.calls.pipeline import CallPipeline, Step, default_steps
from jarvis.aggregator.calls.record import CallRecorder
from jarvis.aggregator.calls.routes import DownstreamRoute, JarvisToolRoute, Proceed, Route
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.ratelimit import Limit, RateLimiter
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Tool
from jarvis.aggregator.usage import UsageRecorder
from jarvis.aggregator.views.registry import UsageEventRecord

pytestmark = pytest.mark.anyio

QUARANTINED = "server 'notes' changed tool 'wipe': quarantined until approved"
LINK = "server 'notes' needs your authorization with your own account: https://jarvis.test/consent/1"


@dataclass
class Sink:
    """Where the usage recorder's events land (the registry, in the aggregator)."""

    events: list[UsageEventRecord] = field(default_factory=list)

    async def record_usage(self, events: Iterable[UsageEventRecord]) -> None:
        self.events.extend(events)


class AskConsent:
    """A person with no grant yet: the consent step's backend answers with their link."""

    async def ask(self, call: ToolCall, proceed: Proceed) -> Result:
        raise Refused("needs_consent", LINK)


async def _status(args: Any, principal: Principal) -> dict[str, str]:
    return {"status": "ok"}


STATUS = Tool(name="jarvis_status", description="Status", handler=_status, read_only=True)
WIPE = Tool(name="jarvis_wipe", description="Wipe", handler=_status)


def downstream(tool: str, *, withheld: str | None = None, consent: bool = False) -> DownstreamRoute:
    async def send(call: ToolCall) -> Result:
        return {"content": [{"type": "text", "text": f"{tool} ran"}], "isError": False}

    def deny(principal: Principal) -> str | None:
        return None if "servers:notes" in principal.scopes else "your token's scopes do not allow it"

    return DownstreamRoute(
        "notes",
        f"notes__{tool}",
        "personal" if consent else "shared",
        send,
        deny,
        lambda: withheld,
        asker=AskConsent() if consent else None,
    )


@dataclass(frozen=True)
class Case:
    name: str
    scopes: tuple[str, ...]
    route: Route
    calls: int  # the outcome is the last call's: a rate limit shows on the second
    outcome: str


def cases() -> list[Case]:
    return [
        Case("allowed", ("read",), JarvisToolRoute(STATUS, "jarvis", {}), 1, "ok"),
        Case("wrong scope", ("read",), JarvisToolRoute(WIPE, "jarvis", {}), 1, "denied"),
        Case("rate-limited", ("read",), JarvisToolRoute(STATUS, "jarvis", {}), 2, "rate_limited"),
        Case("quarantined", ("servers:notes",), downstream("wipe", withheld=QUARANTINED), 1, "withheld"),
        Case("needs consent", ("servers:notes",), downstream("read", consent=True), 1, "needs_consent"),
        Case("shared server", ("servers:notes",), downstream("read"), 1, "ok"),
        Case("downstream wrong scope", ("read",), downstream("read"), 1, "denied"),
    ]


async def outcomes(steps: tuple[Step, ...] | None = None) -> tuple[dict[str, str], Sink, AggregatorMetrics]:
    sink, metrics = Sink(), AggregatorMetrics(CollectorRegistry())
    limiter = RateLimiter(Limit(per_second=0.001, burst=1), {}, metrics.rate_limited)
    usage = UsageRecorder(sink)
    pipeline = CallPipeline(CallRecorder(usage, metrics), steps if steps is not None else default_steps(limiter))
    seen = {}
    for n, case in enumerate(cases()):
        principal = Principal(f"token-{n}", case.name, case.scopes)
        for _ in range(case.calls):
            await pipeline.run(ToolCall(principal, "jarvis", case.route.tool, {}), case.route)
        await usage.flush()
        seen[case.name] = sink.events[-1].outcome
    return seen, sink, metrics


async def test_each_case_is_decided_by_its_step_and_recorded_once() -> None:
    seen, sink, metrics = await outcomes()
    assert seen == {case.name: case.outcome for case in cases()}
    # One record per call, and one count per call, whatever decided it.
    calls = sum(case.calls for case in cases())
    assert len(sink.events) == calls
    counted = sum(
        sample.value
        for family in metrics.tool_calls.collect()
        for sample in family.samples
        if sample.name.endswith("_total")
    )
    assert counted == calls
    # Only the calls a server was sent count among its forwarded calls.
    forwarded = {
        sample.labels["outcome"]: sample.value
        for family in metrics.downstream_calls.collect()
        for sample in family.samples
        if sample.name.endswith("_total")
    }
    assert forwarded == {"ok": 1.0}


async def test_a_refusal_says_what_its_step_says() -> None:
    sink, metrics = Sink(), AggregatorMetrics(CollectorRegistry())
    pipeline = CallPipeline(CallRecorder(UsageRecorder(sink), metrics), default_steps(None))
    principal = Principal("t", "t", ("servers:notes",))
    route = downstream("wipe", withheld=QUARANTINED)
    result = await pipeline.run(ToolCall(principal, "profile", route.tool, {}), route)
    assert isinstance(result, types.CallToolResult)
    assert result.is_error
    assert result.content == [types.TextContent(text=QUARANTINED)]


@pytest.mark.parametrize("removed", range(len(default_steps(None))))
async def test_taking_any_step_out_changes_an_answer(removed: int) -> None:
    limiter = RateLimiter(Limit(per_second=0.001, burst=1), {}, AggregatorMetrics(CollectorRegistry()).rate_limited)
    steps = default_steps(limiter)
    without = steps[:removed] + steps[removed + 1 :]
    full, _, _ = await outcomes()
    seen, _, _ = await outcomes(without)
    assert seen != full, f"{type(steps[removed]).__name__} decided nothing"
