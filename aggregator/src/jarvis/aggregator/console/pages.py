"""The console's pages under /console: sign-in, Connect a client, My accounts, My tokens, and the admin's pages.

Every page is rendered on the server (Jinja2, no script: decision 0067). A request's person comes from the console
session cookie (Path=/console, HttpOnly, SameSite=Lax, Secure behind https; sessions.py); their scopes are asked
anew on each request, from their roles as the authorization server computes them (oauth/server/people.py), so a
role changed or a person disabled shows at once. Every form carries the session's CSRF token and is refused from
another origin. Every action is a tool call through the call pipeline (calls.py): no policy is decided here that
the MCP doors do not decide the same way.
"""

from __future__ import annotations

import fnmatch
import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from jarvis.aggregator.console.calls import Answer, ToolCalls
from jarvis.aggregator.console.clients import install_links, snippets
from jarvis.aggregator.console.sessions import LOCAL, SESSION_SECONDS, Session, Sessions
from jarvis.aggregator.downstream.auth.person import person_of
from jarvis.aggregator.downstream.hosting.personal import PersonalServers
from jarvis.aggregator.oauth.resource import USER_TOKEN_PREFIX
from jarvis.aggregator.oauth.server.browser import BrowserSignIn
from jarvis.aggregator.oauth.server.people import People, user_identity
from jarvis.aggregator.oauth.upstream import Identity
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, Principal
from jarvis.common.surfaces import PROFILE_PATH_PREFIX

log = logging.getLogger(__name__)

PATH = "/console"
COOKIE = "jarvis_console"
SIGN_IN_PURPOSE = "console"
KEY_FIELD = "key:"  # a form field holding the person's value for one of a server's keys
HERE = Path(__file__).parent
_HEADERS = {
    "cache-control": "no-store",
    # No Referer leaves for another origin (a one-time link's token); same-origin posts keep their Origin header,
    # which no-referrer would make "null".
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'",
}


class Console:
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
        if sign_in is not None:
            sign_in.handlers[SIGN_IN_PURPOSE] = self.identified

    def routes(self) -> list[Route]:
        return [
            Route(PATH, self.home, methods=["GET"]),
            Route(f"{PATH}/", self.home, methods=["GET"]),
            Route(f"{PATH}/signin", self.start_sign_in, methods=["GET"]),
            Route(f"{PATH}/logout", self.logout, methods=["POST"]),
            Route(f"{PATH}/accounts", self.accounts, methods=["GET"]),
            Route(f"{PATH}/accounts/connect", self.connect, methods=["POST"]),
            Route(f"{PATH}/accounts/disconnect", self.disconnect, methods=["POST"]),
            Route(f"{PATH}/accounts/keys", self.set_keys, methods=["POST"]),
            Route(f"{PATH}/tokens", self.tokens, methods=["GET"]),
            Route(f"{PATH}/tokens", self.create_token, methods=["POST"]),
            Route(f"{PATH}/tokens/revoke", self.revoke_token, methods=["POST"]),
            Route(f"{PATH}/admin/people", self.admin_people, methods=["GET"]),
            Route(f"{PATH}/static/console.css", self.stylesheet, methods=["GET"]),
        ]

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
            via="console",
        )

    async def _who(self, request: Request) -> tuple[Session, Principal] | Response:
        session = await self._session(request)
        principal = await self.principal(session) if session is not None else None
        if session is None or principal is None:
            return await self._signed_out(request)
        return session, principal

    async def _form(self, request: Request) -> tuple[Session, Principal, FormData] | Response:
        """A form's post: from Jarvis's own origin, with the session's CSRF token; else 403, changing nothing."""
        if not await self._same_origin(request):
            return self._page(request, "refused.html", {"why": "This form was sent from another site."}, status=403)
        who = await self._who(request)
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

    # -- rendering

    def _page(
        self, request: Request, template: str, values: dict[str, Any], *, status: int = 200, who: Any = None
    ) -> HTMLResponse:
        session, principal = who if who is not None else (None, None)
        body = self.templates.get_template(template).render(
            path=PATH, page=request.url.path, session=session, principal=principal, **values
        )
        return HTMLResponse(body, status_code=status, headers=_HEADERS)

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

    # -- sign-in and out

    async def home(self, request: Request) -> Response:
        token = request.query_params.get("token")
        if token is not None:
            if self.sign_in is not None or not await self.sessions.redeem_link(token):
                why = "This link was used already, has expired, or is not one this Jarvis made."
                return self._page(request, "refused.html", {"why": why}, status=403)
            session = await self.sessions.open(LOCAL)
            return await self._with_session(RedirectResponse(f"{PATH}/", 303, headers=_HEADERS), session)
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        return self._page(request, "connect.html", {"surfaces": await self._surfaces(who[1])}, who=who)

    async def start_sign_in(self, request: Request) -> Response:
        if self.sign_in is None:
            return await self._signed_out(request)
        started = await self.sign_in.start(SIGN_IN_PURPOSE, {})
        return started.set_on(RedirectResponse(started.url, 303, headers=_HEADERS), await self._secure())

    async def identified(self, identity: Identity, _: dict[str, Any]) -> Response:
        """The team's provider signed the browser in (oauth/server/browser.py): its console session."""
        session = await self.sessions.open(identity.subject)
        return await self._with_session(RedirectResponse(f"{PATH}/", 303, headers=_HEADERS), session)

    async def logout(self, request: Request) -> Response:
        checked = await self._form(request)
        if isinstance(checked, Response):
            return checked
        await self.sessions.close(checked[0].id)
        response = RedirectResponse(f"{PATH}/", 303, headers=_HEADERS)
        response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="lax", secure=await self._secure())
        return response

    # -- Connect a client

    async def _surfaces(self, principal: Principal) -> list[dict[str, Any]]:
        base = await self.base_url()
        placeholder = "<your token>" if self.tokens_required and self.sign_in is None else None
        answer = []
        for path in self.paths():
            name = self.surface_at(path)
            if name is not None and principal.may_use_surface(name):
                url = base + path
                entry = _entry_name(path, name)
                links = install_links(entry, url) if placeholder is None else []
                answer.append({"name": name, "url": url, "snippets": snippets(entry, url, placeholder), "links": links})
        return answer

    # -- My accounts

    async def accounts(self, request: Request) -> Response:
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        return self._page(request, "accounts.html", await self._accounts(who[1]), who=who)

    async def _accounts(self, principal: Principal, **extra: Any) -> dict[str, Any]:
        if not self.calls.may(principal, "jarvis_server", "list"):
            return {"error": "Your scopes do not allow the jarvis surface's servers.", "accounts": [], **extra}
        listed = await self.calls.call(principal, "jarvis_server", {"action": "list"})
        if not listed.ok:
            return {"error": listed.error, "accounts": [], **extra}
        names = {str(s.get("name")) for s in listed.payload.get("servers", [])}
        person = person_of(principal)
        states = await self.personal.connections(person) if self.personal is not None and person else []
        accounts = [{"server": c.server, "state": c.state} for c in states if c.server in names]
        may_connect = self.calls.may(principal, "jarvis_server", "connect")
        return {
            "accounts": accounts,
            "keys": await self._keys(names, person),
            "may_connect": may_connect,
            "error": "",
            **extra,
        }

    async def _keys(self, names: set[str], person: str) -> list[dict[str, Any]]:
        """The servers that take each person's own keys (servers.per_person): the names, which of them this person
        has set (never the values: they are not shown back)."""
        keyed = self.personal.keyed if self.personal is not None else None
        if keyed is None:
            return []
        answer = []
        for server in sorted(names):
            if keyed.serves(server):
                needed = list(keyed.plans[server][1])
                have = set(await keyed.values(server, person)) if person else set()
                state = "ready" if set(needed) <= have else "needs keys"
                answer.append({"server": server, "state": state, "names": [(n, n in have) for n in needed]})
        return answer

    async def set_keys(self, request: Request) -> Response:
        """The person's own values for a server's keys: jarvis_server connect with env, the MCP tool's call."""
        checked = await self._form(request)
        if isinstance(checked, Response):
            return checked
        session, principal, form = checked
        server = str(form.get("server", ""))
        env = {str(k).removeprefix(KEY_FIELD): str(v) for k, v in form.items() if str(k).startswith(KEY_FIELD) and v}
        if not env:
            values = await self._accounts(principal, note="Type a value for at least one key.")
            return self._page(request, "accounts.html", values, status=400, who=(session, principal))
        answer = await self.calls.call(principal, "jarvis_server", {"action": "connect", "name": server, "env": env})
        note = answer.error or f"Your keys for {server} are saved."
        values = await self._accounts(principal, note=note)
        return self._page(request, "accounts.html", values, status=200 if answer.ok else 400, who=(session, principal))

    async def connect(self, request: Request) -> Response:
        checked = await self._form(request)
        if isinstance(checked, Response):
            return checked
        session, principal, form = checked
        server = str(form.get("server", ""))
        answer = await self.calls.call(principal, "jarvis_server", {"action": "connect", "name": server})
        if answer.ok and isinstance(answer.payload, dict) and answer.payload.get("link"):
            return RedirectResponse(str(answer.payload["link"]), 303, headers=_HEADERS)
        note = answer.error or str((answer.payload or {}).get("next", ""))
        values = await self._accounts(principal, note=note)
        return self._page(request, "accounts.html", values, status=200 if answer.ok else 400, who=(session, principal))

    async def disconnect(self, request: Request) -> Response:
        checked = await self._form(request)
        if isinstance(checked, Response):
            return checked
        session, principal, form = checked
        server = str(form.get("server", ""))
        answer = await self.calls.call(principal, "jarvis_server", {"action": "disconnect", "name": server})
        note = answer.error or f"Jarvis forgot your authorization or keys at {server}."
        values = await self._accounts(principal, note=note)
        return self._page(request, "accounts.html", values, status=200 if answer.ok else 400, who=(session, principal))

    # -- My tokens

    async def tokens(self, request: Request) -> Response:
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        return self._page(request, "tokens.html", await self._tokens(who[1]), who=who)

    async def _tokens(self, principal: Principal, **extra: Any) -> dict[str, Any]:
        # A list the person may not see is not asked for: no refused call in the audit log for a page view.
        if self.calls.may(principal, "token", "list"):
            listed = await self.calls.call(principal, "token", {"action": "list"})
        else:
            listed = Answer(None, "Your scopes do not allow managing access tokens: that is an admin's.")
        return {
            "tokens": listed.payload.get("tokens", []) if listed.ok else [],
            "error": listed.error,
            "may_create": self.calls.may(principal, "token", "create"),
            "may_revoke": self.calls.may(principal, "token", "revoke"),
            **extra,
        }

    async def create_token(self, request: Request) -> Response:
        checked = await self._form(request)
        if isinstance(checked, Response):
            return checked
        session, principal, form = checked
        arguments: dict[str, Any] = {
            "action": "create",
            "scope": " ".join(str(s) for s in form.getlist("scope") if s),
            "name": str(form.get("name", "")),
        }
        expires = str(form.get("expires_in", "") or "0")
        arguments["expires_in"] = int(expires) if expires.isdigit() else expires
        answer = await self.calls.call(principal, "token", arguments)
        created = answer.payload if answer.ok else None
        values = await self._tokens(principal, created=created, note=answer.error)
        return self._page(request, "tokens.html", values, status=200 if answer.ok else 400, who=(session, principal))

    async def revoke_token(self, request: Request) -> Response:
        checked = await self._form(request)
        if isinstance(checked, Response):
            return checked
        session, principal, form = checked
        answer = await self.calls.call(principal, "token", {"action": "revoke", "token_id": str(form.get("id", ""))})
        values = await self._tokens(principal, note=answer.error or "Revoked.")
        return self._page(request, "tokens.html", values, status=200 if answer.ok else 400, who=(session, principal))

    # -- admin

    async def admin_people(self, request: Request) -> Response:
        """The people who signed in: an admin's page; anyone else gets 403 from here, not a hidden link."""
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        if not who[1].sees_everything:
            why = "This page is an admin's: your scopes do not include admin."
            return self._page(request, "refused.html", {"why": why}, status=403, who=who)
        listed = await self.calls.call(who[1], "user", {"action": "list"})
        users = listed.payload.get("users", []) if listed.ok else []
        return self._page(request, "people.html", {"users": users, "error": listed.error}, who=who)


def _entry_name(path: str, surface: str) -> str:
    """The name `jarvis client edit` gives a client's entry for it (the registry's clients/entries.py): jarvis for
    the jarvis surface, jarvis-<surface> or jarvis-<profile> for the others."""
    if path.startswith(PROFILE_PATH_PREFIX):
        return "jarvis-" + path.removeprefix(PROFILE_PATH_PREFIX)
    return "jarvis" if surface == "jarvis" else f"jarvis-{surface}"
