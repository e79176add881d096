"""The admin's pages: Servers, Audit and Health (issue 49); People is people.py's, the live streams live.py's.

Each answers 403 from the server to a person without the admin scope (`_who(admin=True)`), and each action is the
MCP tool's call as the admin: `jarvis_server` (list, info, search, install, uninstall, edit), the admin surface's
`server` (restart, approve) and `audit`, and `jarvis_check_status`. Env and header values arrive masked by the tools
and are never sent to the browser: the edit form's fields are for new values only, an empty one keeps what is stored.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from jarvis.aggregator.calls.record import OUTCOMES
from jarvis.aggregator.console.calls import Answer
from jarvis.aggregator.console.live import ADMIN, AUDIT_FILTERS, LivePages, audit_arguments, rows_digest
from jarvis.aggregator.console.web import HEADERS, Act, field
from jarvis.aggregator.tooling.principal import Principal

ENV_FIELD = "env:"  # a form field holding a new value for one of a server's env variables
AUDIT_COLUMNS = ("id", "at", "token_name", "token_id", "surface", "tool", "action", "target", "outcome", "latency_ms")
EXPORT_PAGE, EXPORT_MAX = 1000, 50_000  # a CSV export reads the filtered log a page at a time, up to this many rows
# A cell a spreadsheet would run as a formula (a caller chose the arguments logged): kept as text.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _approved(answer: Answer, form: FormData) -> str:
    approved = (answer.payload or {}).get("approved") or []
    if approved:
        return f"Approved {', '.join(approved)} of {field(form, 'name')}: its clients may call them again."
    return f"Nothing to approve: no tool of {field(form, 'name')} is quarantined."


def _restarted(answer: Answer, form: FormData) -> str:
    outcome = (answer.payload or {}).get("restarted") or {}
    error = f": {outcome['error']}" if outcome.get("error") else ""
    return f"{field(form, 'name')}: {outcome.get('outcome', 'restarted')}{error}"


RESTART = Act("server", lambda form: {"action": "restart", "name": field(form, "name")}, _restarted)
APPROVE = Act(
    "server",
    lambda form: {
        "action": "approve",
        "name": field(form, "name"),
        "tools": [str(t) for t in form.getlist("tool") if t],
    },
    _approved,
)
# Rejecting a changed tool is taking its server away: the registry keeps no "rejected" pin, and a quarantined tool is
# withheld from every client until approved anyway.
REJECT = Act(
    "jarvis_server",
    lambda form: {"action": "uninstall", "name": field(form, "name")},
    lambda _, form: f"Uninstalled {field(form, 'name')}: its changed tools are served to nobody.",
)
INSTALL = Act(
    "jarvis_server",
    lambda form: {"action": "install", "name": field(form, "name")},
    lambda answer, form: (
        f"Installed {field(form, 'name')}." + (f" {answer.payload['note']}" if answer.payload.get("note") else "")
    ),
)


def launch_changes(form: FormData, kind: str) -> dict[str, str | None]:
    """`jarvis_server edit`'s `env` (kind "env") or `headers` (kind "header") from the edit form: a name given a new
    value (`<kind>:<name>`) is set, one ticked `unset_<kind>` is removed (null), and one left empty keeps its stored
    value (edit merges: the names it is not given stay as they are, so the page never needs, nor sends, the values it
    masks); `new_<kind>_name` and `new_<kind>_value` add one."""
    prefix = f"{kind}:"
    changes: dict[str, str | None] = {
        key.removeprefix(prefix): str(value)
        for key, value in form.multi_items()
        if key.startswith(prefix) and len(key) > len(prefix) and value
    }
    changes.update({str(name): None for name in form.getlist(f"unset_{kind}") if name})
    added = field(form, f"new_{kind}_name").strip()
    if added:
        changes[added] = field(form, f"new_{kind}_value")
    return changes


def _saved(kind: str, what: str, separator: str) -> Callable[[Answer, FormData], str]:
    def note(answer: Answer, form: FormData) -> str:
        launch = ((answer.payload or {}).get("edited") or {}).get("launch") or {}
        shown = ", ".join(f"{k}{separator}{v}" for k, v in (launch.get(kind) or {}).items())  # masked by the tool
        return f"Saved {field(form, 'name')}'s {what}: {shown or 'none'}. A changed launch restarts it."

    return note


EDIT = Act(
    "jarvis_server",
    lambda form: {"action": "edit", "name": field(form, "name"), "env": launch_changes(form, "env")},
    _saved("env", "environment", "="),
)
# A remote server's headers: the admin surface's `server`, since the `jarvis` surface's listing is at its budget.
EDIT_HEADERS = Act(
    "server",
    lambda form: {"action": "headers", "name": field(form, "name"), "headers": launch_changes(form, "header")},
    _saved("headers", "headers", ": "),
)


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


class AdminPages(LivePages):
    def admin_routes(self) -> list[Route]:
        return [
            *self.live_routes(),
            Route(f"{ADMIN}/servers/edit", self.edit, methods=["POST"]),
            Route(f"{ADMIN}/servers/headers", self.edit_headers, methods=["POST"]),
            Route(f"{ADMIN}/servers", self.servers, methods=["GET"]),
            Route(f"{ADMIN}/servers/restart", self.restart, methods=["POST"]),
            Route(f"{ADMIN}/servers/approve", self.approve, methods=["POST"]),
            Route(f"{ADMIN}/servers/reject", self.reject, methods=["POST"]),
            Route(f"{ADMIN}/servers/install", self.install, methods=["POST"]),
            Route(f"{ADMIN}/audit", self.audit, methods=["GET"]),
            Route(f"{ADMIN}/audit.csv", self.audit_csv, methods=["GET"]),
            Route(f"{ADMIN}/health", self.health, methods=["GET"]),
        ]

    # -- Servers

    async def servers(self, request: Request) -> Response:
        who = await self._who(request, admin=True)
        if isinstance(who, Response):
            return who
        query, server = request.query_params.get("q", ""), request.query_params.get("server", "")
        return self._page(request, "servers.html", await self._servers(who[1], query=query, server=server), who=who)

    async def _servers(
        self, principal: Principal, *, note: str = "", query: str = "", server: str = ""
    ) -> dict[str, Any]:
        listed = await self._ask(principal, "jarvis_server", {"action": "list"})
        info = await self._ask(principal, "jarvis_server", {"action": "info", "name": server}) if server else None
        found = await self._ask(principal, "jarvis_server", {"action": "search", "query": query}) if query else None
        servers = listed.payload.get("servers", []) if listed.ok else []
        return {
            "servers": servers,
            "rows_digest": rows_digest(servers),  # where the page's live stream starts (live.py)
            "error": listed.error,
            "note": note,
            "query": query,
            "info": info.payload if info is not None and info.ok else None,
            "info_error": info.error if info is not None else "",
            "results": found.payload.get("results", []) if found is not None and found.ok else [],
            "search_error": found.error if found is not None else "",
            "may_restart": self.calls.may(principal, "server", "restart"),
            "may_approve": self.calls.may(principal, "server", "approve"),
            "may_uninstall": self.calls.may(principal, "jarvis_server", "uninstall"),
            "may_install": self.calls.may(principal, "jarvis_server", "install"),
            "may_edit": self.calls.may(principal, "jarvis_server", "edit"),
        }

    async def restart(self, request: Request) -> Response:
        return await self._act(request, RESTART, self._servers, "servers.html", admin=True)

    async def approve(self, request: Request) -> Response:
        return await self._act(request, APPROVE, self._servers, "servers.html", admin=True)

    async def reject(self, request: Request) -> Response:
        return await self._act(request, REJECT, self._servers, "servers.html", admin=True)

    async def install(self, request: Request) -> Response:
        return await self._act(request, INSTALL, self._servers, "servers.html", admin=True)

    async def edit(self, request: Request) -> Response:
        return await self._act(request, EDIT, self._servers, "servers.html", admin=True)

    async def edit_headers(self, request: Request) -> Response:
        return await self._act(request, EDIT_HEADERS, self._servers, "servers.html", admin=True)

    # -- Audit

    async def audit(self, request: Request) -> Response:
        who = await self._who(request, admin=True)
        if isinstance(who, Response):
            return who
        query = request.query_params
        before = query.get("before_id", "")
        arguments = audit_arguments(query, 100, int(before) if before.isdigit() else 0)
        found = await self._ask(who[1], "audit", arguments)
        filters = {name: query.get(name, "") for name in AUDIT_FILTERS}
        # The first page follows new entries (live.py) from the newest in the log now; an older page stays as it is.
        tail = found.ok and not before
        values = {
            "after": await self.latest_audit_id(who[1]) if tail else 0,
            "tail": tail,
            "entries": found.payload.get("entries", []) if found.ok else [],
            "scanned_to": found.payload.get("scanned_to", 0) if found.ok else 0,
            "error": found.error,
            "filters": filters,
            "outcomes": OUTCOMES,
            "query": urlencode({k: v for k, v in filters.items() if v}),
        }
        return self._page(request, "audit.html", values, status=200 if found.ok else 400, who=who)

    async def audit_csv(self, request: Request) -> Response:
        """The filtered audit log as CSV, every matching entry (up to EXPORT_MAX), newest first."""
        who = await self._who(request, admin=True)
        if isinstance(who, Response):
            return who
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow([*AUDIT_COLUMNS, "arguments"])
        before, rows = 0, 0
        while rows < EXPORT_MAX:
            found = await self._ask(who[1], "audit", audit_arguments(request.query_params, EXPORT_PAGE, before))
            if not found.ok:
                return self._page(request, "refused.html", {"why": found.error}, status=400, who=who)
            for entry in found.payload.get("entries", []):
                writer.writerow([_cell(entry.get(c)) for c in AUDIT_COLUMNS] + [_cell(entry.get("arguments"))])
                rows += 1
            before = int(found.payload.get("scanned_to") or 0)
            if before == 0:
                break
        headers = {**HEADERS, "content-disposition": 'attachment; filename="jarvis-audit.csv"'}
        return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)

    # -- Health

    async def health(self, request: Request) -> Response:
        who = await self._who(request, admin=True)
        if isinstance(who, Response):
            return who
        status = await self._ask(who[1], "jarvis_check_status", {})
        values = {"status": status.payload if status.ok else None, "error": status.error}
        return self._page(request, "health.html", values, who=who)
