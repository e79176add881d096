"""The admin's live pages (issue 49): the Servers table and the Audit tail follow server-sent events.

`/console/admin/servers/events` sends a server's row again when its state, tool count or last error changes (or it is
installed or uninstalled); `/console/admin/audit/events` sends each new audit entry that matches the page's filters.
Both are an admin's only (403 from here to anyone else, as the pages), look again every STANDING_SECONDS whether the
person still may (signed out, disabled or no longer an admin: the stream ends), and watch on the server whatever
worker they land on: what they read is what `jarvis_server list` and the `audit` tool read (the registry, which every
worker and replica shares). Each event carries an `id:`, so a browser that reconnects resumes with `Last-Event-ID`:
the audit's last entry id, or a digest of the server rows the page shows. Rows come as the HTML the page renders
(`server_row.html`, `audit_row.html`), which `static/live.js` puts in place; without script the pages work by reload.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from jarvis.aggregator.console.agent_pages import _event
from jarvis.aggregator.console.sessions import Session
from jarvis.aggregator.console.web import HEADERS, PATH, ConsoleBase
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.results import jsonable
from jarvis.common.errors import JarvisError

log = logging.getLogger(__name__)

ADMIN = f"{PATH}/admin"
AUDIT_FILTERS = ("who", "tool", "server", "outcome", "since", "until")
POLL_SECONDS = 1.0  # how soon a change shows on an open page
STANDING_SECONDS = 10.0  # how soon a stream ends after its person signed out or lost the admin scope
TAIL = 100  # new audit entries sent at most per poll (the page shows 100)
STREAM_HEADERS = {**HEADERS, "content-type": "text/event-stream", "x-accel-buffering": "no"}
SERVER_ROW = ("name", "status", "tools", "last_error")  # what a server's row shows: a change of these is sent

Step = Callable[[Principal], Awaitable[list[str]]]


def audit_arguments(query: Mapping[str, str], limit: int, before_id: int = 0) -> dict[str, Any]:
    """The `audit` tool's arguments from the page's filter form (empty filters left out)."""
    arguments: dict[str, Any] = {"action": "list", "limit": limit}
    arguments.update({name: query[name].strip() for name in AUDIT_FILTERS if query.get(name, "").strip()})
    if before_id > 0:
        arguments["before_id"] = before_id
    return arguments


def rows_digest(servers: list[dict[str, Any]]) -> str:
    """What a page's server rows show, in 16 hex digits: the servers stream's event id."""
    shown = [[server.get(k) for k in SERVER_ROW] for server in servers]
    return hashlib.sha256(json.dumps(shown, default=str).encode()).hexdigest()[:16]


class LivePages(ConsoleBase):
    def live_routes(self) -> list[Route]:
        return [
            Route(f"{ADMIN}/servers/events", self.server_events, methods=["GET"]),
            Route(f"{ADMIN}/audit/events", self.audit_events, methods=["GET"]),
        ]

    async def read(self, principal: Principal, tool: str, arguments: dict[str, Any]) -> Any:
        """`tool`'s answer for `principal`, asked of the tool itself, not through the call pipeline. Tool.call checks
        the arguments and the person's scopes as any call does, but the pipeline would also write an audit entry for
        each read: a stream reads every POLL_SECONDS, so the log would fill with an open page's reads, and the audit
        tail would show its own reads, read them, and so feed itself. A stream's one call through the pipeline is
        at its open (`_opened`): the admin opening it is in the log, once."""
        surface, definition = self.calls.tools[tool]
        return jsonable(await definition.call(arguments, principal, surface.name))

    async def _opened(
        self, request: Request, tool: str, arguments: dict[str, Any]
    ) -> tuple[Session, Principal, Any] | Response:
        who = await self._who(request, admin=True)
        if isinstance(who, Response):
            return who
        answer = await self._ask(who[1], tool, arguments)
        if not answer.ok:
            return self._page(request, "refused.html", {"why": answer.error}, status=400, who=who)
        return who[0], who[1], answer.payload

    async def _admin_still(self, session: Session) -> Principal | None:
        """The session's person, when they are still signed in and still an admin (their roles asked anew)."""
        found = await self.sessions.find(session.id)
        principal = await self.principal(found) if found is not None else None
        return principal if principal is not None and principal.sees_everything else None

    async def _live(self, request: Request, session: Session, principal: Principal, step: Step) -> AsyncIterator[str]:
        """`step`'s events every POLL_SECONDS until the browser goes, the person may no longer, or a read fails."""
        checked = time.monotonic()
        while not await request.is_disconnected():
            if time.monotonic() - checked >= STANDING_SECONDS:
                still = await self._admin_still(session)
                if still is None:
                    yield _event("end", "You are signed out or no longer an admin: reload the page.")
                    return
                principal, checked = still, time.monotonic()
            try:
                for event in await step(principal):
                    yield event
            except JarvisError as error:  # the tool's own answer, as a call would have read it
                yield _event("failed", str(error))
                return
            except Exception:
                log.exception("console: a live stream failed")
                yield _event("failed", "The stream stopped: reload the page.")
                return
            await asyncio.sleep(POLL_SECONDS)

    # -- Servers

    def server_row(self, session: Session, server: dict[str, Any], may_restart: bool) -> str:
        values = {"path": PATH, "session": session, "server": server, "may_restart": may_restart}
        return self.templates.get_template("server_row.html").render(values).strip()

    async def server_events(self, request: Request) -> Response:
        opened = await self._opened(request, "jarvis_server", {"action": "list"})
        if isinstance(opened, Response):
            return opened
        session, principal, listed = opened
        may_restart = self.calls.may(principal, "server", "restart")
        shown = {s["name"]: s for s in listed.get("servers", [])}
        resumed = request.headers.get("last-event-id") or request.query_params.get("after", "")
        first: list[str] = []
        if resumed != rows_digest(list(shown.values())):  # the page shows other rows: all of them, anew
            rows = "\n".join(self.server_row(session, s, may_restart) for s in shown.values())
            first.append(_event("rows", rows, rows_digest(list(shown.values()))))

        async def step(principal: Principal) -> list[str]:
            if first:
                return [first.pop()]
            servers = (await self.read(principal, "jarvis_server", {"action": "list"})).get("servers", [])
            now = {s["name"]: s for s in servers}
            changed = [s for name, s in now.items() if [s.get(k) for k in SERVER_ROW] != _row(shown.get(name))]
            events = [_event("row", self.server_row(session, s, may_restart)) for s in changed]
            events += [_event("gone", f"server-{name}") for name in shown.keys() - now.keys()]
            shown.clear()
            shown.update(now)
            if events:  # the id on the last: a browser cut off within the changes has not all of them
                events.append(_resume_at(rows_digest(servers)))
            return events

        return StreamingResponse(self._live(request, session, principal, step), headers=STREAM_HEADERS)

    # -- Audit

    async def latest_audit_id(self, principal: Principal) -> int:
        """The newest entry's id in the whole log (0 when it is empty): where a tail starts."""
        newest = (await self.read(principal, "audit", {"action": "list", "limit": 1})).get("entries", [])
        return int(newest[0]["id"]) if newest else 0

    async def audit_events(self, request: Request) -> Response:
        """New entries matching the page's filters, oldest first (the page puts each on top), from the entry id in
        `Last-Event-ID` or `after` on; without either, from now."""
        opened = await self._opened(request, "audit", audit_arguments(request.query_params, 1))
        if isinstance(opened, Response):
            return opened
        session, principal, _ = opened
        resumed = request.headers.get("last-event-id") or request.query_params.get("after", "")
        cursor = int(resumed) if resumed.isdigit() and len(resumed) < 19 else await self.latest_audit_id(principal)
        filters = audit_arguments(request.query_params, TAIL)
        template = self.templates.get_template("audit_row.html")

        async def step(principal: Principal) -> list[str]:
            nonlocal cursor
            # Two reads a poll: the log's newest id (one row), then, only when there is something new, the new
            # entries the filters match, between the cursor and that id (each id is read once, matched or not).
            newest = (await self.read(principal, "audit", {"action": "list", "limit": 1, "after_id": cursor}))[
                "entries"
            ]
            if not newest:
                return []
            top = int(newest[0]["id"])
            found = await self.read(principal, "audit", {**filters, "after_id": cursor, "before_id": top + 1})
            cursor = top
            rows = [template.render(entry=e).strip() for e in reversed(found.get("entries", []))]
            return [_event("row", row) for row in rows] + [_resume_at(top)]

        return StreamingResponse(self._live(request, session, principal, step), headers=STREAM_HEADERS)


def _resume_at(event_id: Any) -> str:
    """An event with only an id: the browser's Last-Event-ID from now on, with nothing to show (no data)."""
    return f"id: {event_id}\n\n"


def _row(server: dict[str, Any] | None) -> list[Any] | None:
    return [server.get(k) for k in SERVER_ROW] if server is not None else None
