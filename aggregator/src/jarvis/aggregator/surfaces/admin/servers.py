"""`server` and `audit`: an admin's operations on the hosted servers and the audit log (issue 49's admin pages).

On the `admin` surface, not `jarvis_server`: the `jarvis` surface's listing is at its budget (spec 000), and these
are an admin's alone. The console's Servers and Audit pages call them as the person, as every MCP client does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated

from jarvis.aggregator.calls.record import OUTCOMES
from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream.hosting import report
from jarvis.aggregator.gateways.registry import ServerEdit
from jarvis.aggregator.surfaces.jarvis.servers import Edited, Servers, changes_of
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.registry import AuditEntryView, UsageBucketView
from jarvis.common.errors import InvalidArgument
from jarvis.common.params import Arg, Named

QUARANTINED, PINNED = "quarantined", "pinned"
PAGE = 1000  # the registry's largest page
# Filters the registry cannot apply (server, outcome, until) are applied here, over at most this many entries, so a
# filter that matches nothing answers in bounded time; `scanned_to` lets the caller go on from there.
MAX_SCAN = 20 * PAGE
Limit = Annotated[int, Arg(minimum=1, maximum=1000)]
Time = Annotated[str, Arg("ISO 8601 time, UTC unless it says")]


@dataclass(frozen=True)
class Approve:
    name: str
    tools: list[str] = field(default_factory=list)  # none: every quarantined tool of the server


@dataclass(frozen=True)
class Approved:
    server: str
    approved: list[str]
    still_quarantined: list[str]


@dataclass(frozen=True)
class Restarted:
    restarted: report.RestartOutcome


@dataclass(frozen=True)
class AuditQuery:
    who: Annotated[str, Arg("token id or name, or a person's email")] = ""
    tool: str = ""
    server: Annotated[str, Arg("what the call acted on: a downstream server, or a Jarvis tool's target")] = ""
    outcome: Annotated[str, Arg(", ".join(OUTCOMES))] = ""
    since: Time = ""
    until: Time = ""
    # Bounded as the registry's int64 ids are: a larger number is the caller's error, not the registry's.
    before_id: Annotated[int, Arg("entries older than this id (paging)", minimum=0, maximum=2**63 - 1)] = 0
    after_id: Annotated[int, Arg("entries newer than this id (a tail)", minimum=0, maximum=2**63 - 1)] = 0
    limit: Limit = 100


@dataclass(frozen=True)
class Headers:
    name: str
    headers: Annotated[dict[str, str | None], Arg("header name to its value; null removes it")]


@dataclass(frozen=True)
class UsageQuery:
    since: Time
    bucket_seconds: Annotated[int, Arg("s: 60 (a minute) to 86400 (a day)", minimum=60, maximum=86_400)] = 3600


@dataclass(frozen=True)
class UsageOverTime:
    # Per bucket, tool, action and target; latencies as counts per bin of jarvis.common.latency_bins (5 % wide).
    buckets: list[UsageBucketView]


@dataclass(frozen=True)
class AuditPage:
    entries: list[AuditEntryView]
    # The oldest entry id looked at: pass it as before_id for the next page; 0 when the log has no more.
    scanned_to: int


def _time(value: str, name: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(f"{name} must be an ISO 8601 time such as 2026-01-31T09:00Z, not {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _matches(entry: AuditEntryView, p: AuditQuery, until: datetime | None) -> bool:
    """The filters the registry's ListAudit has no field for."""
    if p.server and entry.target != p.server:
        return False
    if p.outcome and entry.outcome != p.outcome:
        return False
    return until is None or entry.at is None or datetime.fromisoformat(entry.at) <= until


@dataclass(frozen=True)
class Admin:
    ctx: ToolContext

    async def approve(self, p: Approve, _: Principal) -> Approved:
        """Accept the changed definitions (rug-pull pins) of the server's quarantined tools, as `jarvis server
        approve` does; this aggregator serves them at once, the others at their next registry read."""
        registry = self.ctx.registry
        before = {pin.tool: pin.state for pin in await registry.list_tool_pins(p.name)}
        after = await registry.approve_tool_pins(p.name, p.tools)
        await report.refresh(self.ctx.downstream)
        approved = [pin.tool for pin in after if before.get(pin.tool) == QUARANTINED and pin.state == PINNED]
        return Approved(p.name, approved, [pin.tool for pin in after if pin.state == QUARANTINED])

    async def headers(self, p: Headers, _: Principal) -> Edited:
        """A remote server's HTTP headers, set or removed (merged by the registry, as `jarvis_server edit` merges env;
        here, not there, because the `jarvis` surface's listing is at its budget)."""
        set_headers, unset_headers = changes_of(p.headers)
        if not set_headers and not unset_headers:
            raise InvalidArgument("server action=headers needs headers to set (name: value) or remove (name: null)")
        return await Servers(self.ctx).apply(ServerEdit(p.name, set_headers=set_headers, unset_headers=unset_headers))

    async def restart(self, p: Named, _: Principal) -> Restarted:
        return Restarted((await report.restart(self.ctx.downstream, [p.name]))[0])

    async def usage(self, p: UsageQuery, _: Principal) -> UsageOverTime:
        """The log's calls since `since`, counted by the registry per bucket (the console's Usage charts)."""
        since = _time(p.since, "since")
        if since is None:
            raise InvalidArgument("audit action=usage needs since, an ISO 8601 time such as 2026-01-31T09:00Z")
        await self.ctx.usage.flush()  # the calls made just now are counted
        return UsageOverTime(await self.ctx.registry.usage_over_time(since, p.bucket_seconds))

    async def audit(self, p: AuditQuery, _: Principal) -> AuditPage:
        since, until = _time(p.since, "since"), _time(p.until, "until")
        await self.ctx.usage.flush()  # the calls made just now are in the log
        found: list[AuditEntryView] = []
        before, scanned = p.before_id, 0
        # Without a filter of its own to apply here, every entry the registry answers is one: it is asked for no
        # more than are wanted. Between after_id and before_id (a tail's new entries) there are at most that many
        # ids: so a tail that polls reads only what is new.
        filtered = bool(p.server or p.outcome or until)
        while len(found) < p.limit and scanned < MAX_SCAN:
            size = PAGE if filtered else p.limit - len(found)
            size = min(size, before - p.after_id - 1) if p.after_id and before else size
            if size < 1:
                return AuditPage(found, 0)
            page = await self.ctx.registry.audit(p.tool, p.who, size, before_id=before, since=since)
            scanned += len(page)
            for entry in page:
                if entry.id <= p.after_id:
                    return AuditPage(found, 0)
                before = entry.id
                if _matches(entry, p, until):
                    found.append(entry)
                    if len(found) == p.limit:
                        return AuditPage(found, before)
            if len(page) < size:
                return AuditPage(found, 0)
        return AuditPage(found, before)


def build(ctx: ToolContext) -> list[Tool]:
    a = Admin(ctx)
    return [
        Tool(
            name="server",
            description="Hosted servers, an admin's: restart|approve|headers",
            summary=(
                "Restart a hosted MCP server, approve its quarantined tools (those whose definitions changed "
                "since they were pinned, a rug pull, withheld until an admin accepts them), or set its HTTP headers."
            ),
            actions=[
                Action("restart", a.restart, Named, admin=True),
                Action("approve", a.approve, Approve, idempotent=True, admin=True),
                Action("headers", a.headers, Headers, idempotent=True, admin=True),
            ],
        ),
        Tool(
            name="audit",
            description="The audit log, filtered: list|usage",
            summary=(
                "Who called which tool, when, on what, and the outcome: the audit log newest first, filtered by "
                "person or token, tool, server, outcome and time; or its calls counted per hour, tool and target."
            ),
            actions=[
                Action("list", a.audit, AuditQuery, read_only=True, idempotent=True, admin=True),
                Action("usage", a.usage, UsageQuery, read_only=True, idempotent=True, admin=True),
            ],
        ),
    ]
