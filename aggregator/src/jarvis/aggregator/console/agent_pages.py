"""My sessions (issue 49): the agent sessions of the projects a person may see, each with its output, live, and
the changes the agent made to its workspace; a person who may spawn starts one from the page.

The output arrives over server-sent events: `/console/sessions/<project>/<session>/events` long-polls the `session`
tool's `events` action as the person (the same pipeline, scopes and audit as an MCP client's) and sends each event as
it comes, resuming from `Last-Event-ID` when the browser reconnects. A session's page shows the events so far without
any script; `static/live.js`, the console's one script, served by Jarvis itself, appends the new ones (decision 0068).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from jarvis.aggregator.console.calls import Answer
from jarvis.aggregator.console.web import HEADERS, HERE, PATH, Act, ConsoleBase, field
from jarvis.aggregator.tooling.principal import Principal

SESSIONS = f"{PATH}/sessions"
RUNNING = "running"  # the runtime's state of a session whose agent still works; every other state is final
SHOWN_EVENTS = 500  # a session page shows at most this many events; the stream goes on from the last
SHOWN_DIFF_BYTES = 64 * 1024  # of the workspace's diff, a page shows at most this much (the tool says it truncated)
WAIT_SECONDS = 15.0  # each long poll of the stream (the tool allows up to 20)


def event_line(event: dict[str, Any]) -> str:
    """One event as a line a person reads: the agent's text where it has some, else its JSON."""
    payload = event.get("payload")
    kind = str(event.get("type") or "event")
    if isinstance(payload, dict):
        message = payload.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        texts = [str(c["text"]) for c in content or [] if isinstance(c, dict) and isinstance(c.get("text"), str)]
        if texts:
            return f"{kind}: {' '.join(texts)}"
        if isinstance(payload.get("result"), str):
            return f"{kind}: {payload['result']}"
        return f"{kind}: {json.dumps(payload, separators=(',', ':'))}"
    return f"{kind}: {payload}" if payload is not None else kind


def _ended(answer: Answer, form: FormData) -> str:
    session = (answer.payload or {}).get("session") or {}
    return f"Session {field(form, 'session_id')}: {session.get('state', 'ending')}."


END = Act(
    "session",
    lambda form: {
        "action": "end",
        "project_id": field(form, "project_id"),
        "session_id": field(form, "session_id"),
    },
    _ended,
)


class AgentSessionPages(ConsoleBase):
    def session_routes(self) -> list[Route]:
        return [
            Route(SESSIONS, self.sessions_page, methods=["GET"]),
            Route(f"{SESSIONS}/end", self.end_session, methods=["POST"]),
            Route(f"{SESSIONS}/start", self.start_session, methods=["POST"]),
            Route(SESSIONS + "/{project_id}/{session_id}", self.session_page, methods=["GET"]),
            Route(SESSIONS + "/{project_id}/{session_id}/events", self.session_events, methods=["GET"]),
            Route(f"{PATH}/static/live.js", self.live_script, methods=["GET"]),
        ]

    async def live_script(self, _: Request) -> Response:
        return FileResponse(HERE / "static" / "live.js", media_type="text/javascript")

    async def _projects_and_sessions(self, principal: Principal, note: str = "") -> dict[str, Any]:
        """Each project the person may list, with its sessions, newest first."""
        listed = await self.calls.call(principal, "project", {"action": "list"})
        if not listed.ok:
            return {"error": listed.error, "projects": [], "note": note}
        projects = []
        for project in listed.payload.get("projects", []):
            found = await self.calls.call(principal, "session", {"action": "list", "project_id": project["id"]})
            sessions = found.payload.get("sessions", []) if found.ok else []
            sessions.sort(key=lambda s: s.get("created_at") or "", reverse=True)
            projects.append({"project": project, "sessions": sessions, "error": found.error})
        return {
            "projects": projects,
            "note": note,
            "may_end": self.calls.may(principal, "session", "end"),
            # Offered per project: a project-bound scope may spawn in its project only (the call checks again).
            "may_spawn": {
                p["project"]["id"]: self.calls.may(principal, "session", "spawn", project=p["project"]["id"])
                for p in projects
            },
        }

    async def sessions_page(self, request: Request) -> Response:
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        values = await self._projects_and_sessions(who[1])
        return self._page(request, "sessions.html", values, status=400 if values.get("error") else 200, who=who)

    async def end_session(self, request: Request) -> Response:
        return await self._act(request, END, self._projects_and_sessions, "sessions.html")

    async def start_session(self, request: Request) -> Response:
        """`session action=spawn` as the person, then the new session's page, where its output arrives live."""
        checked = await self._form(request)
        if isinstance(checked, Response):
            return checked
        session, principal, form = checked
        project = field(form, "project_id")
        arguments = {"action": "spawn", "project_id": project, "prompt": field(form, "prompt")}
        answer = await self.calls.call(principal, "session", arguments)
        spawned = (answer.payload or {}).get("session") if answer.ok else None
        if not spawned:
            values = await self._projects_and_sessions(principal, note=answer.error or "The session did not start.")
            return self._page(request, "sessions.html", values, status=400, who=(session, principal))
        return RedirectResponse(f"{SESSIONS}/{project}/{spawned['id']}", 303, headers=HEADERS)

    async def session_page(self, request: Request) -> Response:
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        project, session = request.path_params["project_id"], request.path_params["session_id"]
        got = await self.calls.call(who[1], "session", {"action": "get", "project_id": project, "session_id": session})
        if not got.ok:
            return self._page(request, "refused.html", {"why": got.error}, status=404, who=who)
        arguments = {"project_id": project, "session_id": session, "limit": SHOWN_EVENTS}
        events = await self.calls.call(who[1], "session", {"action": "events", **arguments})
        shown = events.payload.get("events", []) if events.ok else []
        values = {
            "agent_session": got.payload,
            "changes": await self._changes(who[1], project, session),
            "lines": [(e.get("seq", 0), event_line(e)) for e in shown],
            "cursor": events.payload.get("next_cursor", 0) if events.ok else 0,
            "error": events.error,
            "live": got.payload.get("state") == RUNNING,
            "may_end": self.calls.may(who[1], "session", "end"),
        }
        return self._page(request, "session.html", values, who=who)

    async def _changes(self, principal: Principal, project: str, session: str) -> Answer:
        """The session's workspace changes (`project_changes`), or why there are none to show."""
        arguments = {"project_id": project, "session_id": session, "max_bytes": SHOWN_DIFF_BYTES}
        if not self.calls.may(principal, "project_changes", project=project):
            return Answer(None, "Your scopes do not allow project_changes.")
        return await self.calls.call(principal, "project_changes", arguments)

    async def session_events(self, request: Request) -> Response:
        """The session's events from the cursor on, as server-sent events, until the session is over or the browser
        goes away. A browser that reconnects says the last event it got in `Last-Event-ID`."""
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        project, session = request.path_params["project_id"], request.path_params["session_id"]
        resumed = request.headers.get("last-event-id") or request.query_params.get("after", "0")
        cursor = int(resumed) if resumed.isdigit() else 0
        headers = {**HEADERS, "content-type": "text/event-stream", "x-accel-buffering": "no"}
        stream = self._stream(request, who[1], project, session, cursor)
        return StreamingResponse(stream, headers=headers, media_type="text/event-stream")

    async def _stream(
        self, request: Request, principal: Principal, project: str, session: str, cursor: int
    ) -> AsyncIterator[str]:
        arguments = {"action": "events", "project_id": project, "session_id": session, "wait": WAIT_SECONDS}
        while not await request.is_disconnected():
            answer = await self.calls.call(principal, "session", {**arguments, "after": cursor})
            if not answer.ok:
                yield _event("failed", answer.error)
                return
            for event in answer.payload.get("events", []):
                yield _event("message", event_line(event), event.get("seq"))
            cursor = int(answer.payload.get("next_cursor", cursor))
            state = str(answer.payload.get("state", ""))
            if state != RUNNING and not answer.payload.get("events"):
                yield _event("end", state)
                return


def _event(kind: str, data: str, seq: Any = None) -> str:
    """One server-sent event; its data line by line (a line break in the data would end the field)."""
    lines = [f"event: {kind}"] if kind != "message" else []
    if seq is not None:
        lines.append(f"id: {seq}")
    lines += [f"data: {line}" for line in (data.splitlines() or [""])]
    return "\n".join(lines) + "\n\n"
