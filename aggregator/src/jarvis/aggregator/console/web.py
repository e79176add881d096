"""What every console page stands on: the session cookie and the person it names (their scopes asked anew on each
request, from their roles as the authorization server computes them, oauth/server/people.py, so a role changed or a
person disabled shows at once), the CSRF token and Origin check every form passes, and rendering (Jinja2, no script:
decision 0068). The pages themselves are pages.py's.
"""

from __future__ import annotations

import fnmatch
import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response

from jarvis.aggregator.console.calls import Answer, ToolCalls
from jarvis.aggregator.console.sessions import LOCAL, SESSION_SECONDS, Session, Sessions
from jarvis.aggregator.downstream.hosting.personal import PersonalServers
from jarvis.aggregator.oauth.resource import USER_TOKEN_PREFIX
from jarvis.aggregator.oauth.server.browser import BrowserSignIn
from jarvis.aggregator.oauth.server.people import People, user_identity
from jarvis.aggregator.oauth.upstream import Identity
from jarvis.aggregator.tooling.principal import CONSOLE, LOCAL_ADMIN, Principal

log = logging.getLogger(__name__)

PATH = "/console"
COOKIE = "jarvis_console"
SIGN_IN_PURPOSE = "console"
HERE = Path(__file__).parent
HEADERS = {
    "cache-control": "no-store",
    # No Referer leaves for another origin (a one-time link's token); same-origin posts keep their Origin header,
    # which no-referrer would make "null".
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'",
}


# What a page shows, for the person, with a note (a form's outcome) on top.
PageValues = Callable[..., Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Act:
    """One form's tool call: its arguments from the form, and the note shown when it succeeded."""

    tool: str
    arguments: Callable[[FormData], dict[str, Any]]
    done: Callable[[Answer, FormData], str]


def utc(seconds: Any) -> str:
    """Unix seconds as a person reads them ("2026-12-06 16:50 UTC"); "" for none."""
    if not isinstance(seconds, int | float) or seconds <= 0:
        return ""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")


def field(form: FormData, name: str) -> str:
    return str(form.get(name, "") or "")


class ConsoleBase:
    """`base_url`: Jarvis's public URL; `origins`: the other origins a form may come from (the gate's patterns);
    `sign_in`: the team's provider's browser sign-in, None without sign-in (then the local admin's one-time link);
    `paths`: the MCP paths served now (surfaces and profiles); `surface_at`: the surface a path names (the gate's);
    `announce`: this process prints the one-time link (one worker of several)."""

    def __init__(
        self,
        sessions: Sessions,
        calls: ToolCalls,
        base_url: Callable[[], Awaitable[str]],
        origins: Sequence[str],
        sign_in: BrowserSignIn | None,
        personal: PersonalServers | None,
        paths: Callable[[], Sequence[str]],
        surface_at: Callable[[str], str | None],
        tokens_required: bool,
        announce: bool,
    ) -> None:
        self.sessions = sessions
        self.calls = calls
        self.base_url = base_url
        self.origins = tuple(origins)
        self.sign_in = sign_in
        self.people: People | None = sign_in.deps.people if sign_in is not None else None
        self.personal = personal
        self.paths = paths
        self.surface_at = surface_at
        self.tokens_required = tokens_required
        self.announce_link = announce and sign_in is None
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True), auto_reload=False
        )
        self.templates.filters["utc"] = utc
        if sign_in is not None:
            sign_in.handlers[SIGN_IN_PURPOSE] = self.identified

    async def identified(self, identity: Identity, payload: dict[str, Any]) -> Response:
        """The team's provider signed a browser in for the console: the pages' (pages.py) answer."""
        raise NotImplementedError

    async def announce(self) -> None:
        """Without sign-in, the local admin's one-time link, in the log of the process that serves it (as Jupyter
        prints its token): the console is never an open page."""
        if not self.announce_link:
            return
        try:
            token = await self.sessions.mint_link()
        except Exception:  # the registry not answering yet: the console waits for a restart, the rest serves
            log.exception("console: no sign-in link could be made")
            return
        log.warning("console: open %s%s/?token=%s (works once)", await self.base_url(), PATH, token)

    async def stylesheet(self, _: Request) -> Response:
        return FileResponse(HERE / "static" / "console.css", media_type="text/css")

    # -- who is asking

    async def _secure(self) -> bool:
        return (await self.base_url()).startswith("https://")

    async def _session(self, request: Request) -> Session | None:
        return await self.sessions.find(request.cookies.get(COOKIE, ""))

    async def principal(self, session: Session) -> Principal | None:
        """The session's person with the scopes their roles grant now; None when they may no longer sign in."""
        if session.subject == LOCAL:
            return LOCAL_ADMIN if self.sign_in is None else None
        if self.people is None:
            return None
        user = await self.people.user(session.subject)
        if user is None or user.get("disabled"):
            return None
        identity = user_identity(user)
        return Principal(
            token_id=USER_TOKEN_PREFIX + identity.subject,
            name=identity.email or identity.name or identity.subject,
            scopes=await self.people.scopes_for(identity),
            user=identity.subject,
            via=CONSOLE,
        )

    async def _who(self, request: Request, *, admin: bool = False) -> tuple[Session, Principal] | Response:
        """The signed-in person; with `admin`, an admin's page: anyone else gets 403 from here, not a hidden link."""
        session = await self._session(request)
        principal = await self.principal(session) if session is not None else None
        if session is None or principal is None:
            return await self._signed_out(request)
        if admin and not principal.sees_everything:
            why = "This page is an admin's: your scopes do not include admin."
            return self._page(request, "refused.html", {"why": why}, status=403, who=(session, principal))
        return session, principal

    async def _ask(self, principal: Principal, tool: str, arguments: dict[str, Any]) -> Answer:
        """A tool's answer, or what the person's scopes say, without a refused call in the audit for a page view."""
        action = str(arguments.get("action", ""))
        if not self.calls.may(principal, tool, action):
            return Answer(None, f"Your scopes do not allow {' action='.join(filter(None, (tool, action)))}.")
        return await self.calls.call(principal, tool, arguments)

    async def _form(self, request: Request, *, admin: bool = False) -> tuple[Session, Principal, FormData] | Response:
        """A form's post: from Jarvis's own origin, with the session's CSRF token; else 403, changing nothing."""
        if not await self._same_origin(request):
            return self._page(request, "refused.html", {"why": "This form was sent from another site."}, status=403)
        who = await self._who(request, admin=admin)
        if isinstance(who, Response):
            return who
        session, principal = who
        form = await request.form()
        csrf = str(form.get("csrf", ""))
        if not csrf or not hmac.compare_digest(csrf, session.csrf):
            why = "This form's token is missing or stale: reload the page and try again."
            return self._page(request, "refused.html", {"why": why}, status=403)
        return session, principal, form

    async def _same_origin(self, request: Request) -> bool:
        """The form came from Jarvis's own pages: Jarvis's public origin, or the origin the request was sent to
        where the gate's host patterns allow it (a loopback port). A browser always says where a post comes from."""
        if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return False
        origin = request.headers.get("origin")
        if origin is None:  # a client that is not a browser: the CSRF token alone decides
            return True
        public = urlsplit(await self.base_url())
        if origin == f"{public.scheme}://{public.netloc}":
            return True
        own = urlsplit(str(request.base_url))
        allowed = any(fnmatch.fnmatchcase(origin, pattern) for pattern in self.origins)
        return allowed and origin == f"{own.scheme}://{own.netloc}"

    async def _act(
        self, request: Request, act: Act, page: PageValues, template: str, *, admin: bool = False
    ) -> Response:
        """A form that makes one tool call and shows its page again with the outcome: the same shape for every
        button (disconnect, revoke, restart, approve, …)."""
        checked = await self._form(request, admin=admin)
        if isinstance(checked, Response):
            return checked
        session, principal, form = checked
        answer = await self.calls.call(principal, act.tool, act.arguments(form))
        note = answer.error or act.done(answer, form)
        values = await page(principal, note=note)
        return self._page(request, template, values, status=200 if answer.ok else 400, who=(session, principal))

    # -- rendering

    def _page(
        self, request: Request, template: str, values: dict[str, Any], *, status: int = 200, who: Any = None
    ) -> HTMLResponse:
        session, principal = who if who is not None else (None, None)
        # The menu offers My sessions and My schedules to whom may list them (a page offers only what the person's
        # scopes allow).
        agents = principal is not None and self.calls.may(principal, "session", "list")
        scheduling = principal is not None and self.calls.may(principal, "schedule", "list")
        body = self.templates.get_template(template).render(
            path=PATH,
            page=request.url.path,
            session=session,
            principal=principal,
            agents=agents,
            scheduling=scheduling,
            **values,
        )
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    async def _signed_out(self, request: Request) -> Response:
        return self._page(request, "signin.html", {"sign_in": self.sign_in is not None}, status=401)

    async def _with_session(self, response: Response, session: Session) -> Response:
        response.set_cookie(
            COOKIE,
            session.id,
            max_age=SESSION_SECONDS,
            path=PATH,
            httponly=True,
            samesite="lax",
            secure=await self._secure(),
        )
        return response
