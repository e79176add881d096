"""The console's pages under /console: sign-in, Connect a client, My accounts, My tokens (the
other pages are mixins: admin.py, agent_pages.py, people.py, schedules.py, profiles.py, usage.py).

A request's person, its forms' checks and rendering are web.py's. Every action is a tool call through the call
pipeline (calls.py), as the person: no policy is decided here that the MCP doors do not decide the same way.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from jarvis.aggregator.console.admin import AdminPages
from jarvis.aggregator.console.agent_pages import AgentSessionPages
from jarvis.aggregator.console.calls import Answer
from jarvis.aggregator.console.clients import install_links, snippets
from jarvis.aggregator.console.people import PeoplePages
from jarvis.aggregator.console.profiles import ProfilePages
from jarvis.aggregator.console.schedules import SchedulePages
from jarvis.aggregator.console.sessions import LOCAL
from jarvis.aggregator.console.usage import UsagePages
from jarvis.aggregator.console.web import COOKIE, HEADERS, PATH, SIGN_IN_PURPOSE, Act, field
from jarvis.aggregator.downstream.auth.person import person_of
from jarvis.aggregator.oauth.server.people import narrowed
from jarvis.aggregator.oauth.upstream import Identity
from jarvis.aggregator.tooling.principal import Principal
from jarvis.common.surfaces import PROFILE_PATH_PREFIX

KEY_FIELD = "key:"  # a form field holding the person's value for one of a server's keys
# The scopes My tokens offers an admin, who holds them all (others are offered their own).
ADMIN_OFFER = ("jarvis", "orchestrator", "debug", "servers", "read", "metrics", "admin")


DISCONNECT = Act(
    "jarvis_server",
    lambda form: {"action": "disconnect", "name": field(form, "server")},
    lambda _, form: f"Jarvis forgot your authorization or keys at {field(form, 'server')}.",
)
REVOKE = Act("token", lambda form: {"action": "revoke", "token_id": field(form, "id")}, lambda _, __: "Revoked.")


class Console(AdminPages, AgentSessionPages, PeoplePages, SchedulePages, ProfilePages, UsagePages):
    """The pages; the team's provider's returns for a console sign-in come to `identified` (ConsoleBase registers
    it)."""

    def routes(self) -> list[Route]:
        return [
            Route(PATH, self.home, methods=["GET"]),
            Route(f"{PATH}/", self.home, methods=["GET"]),
            Route(f"{PATH}/signin", self.start_sign_in, methods=["GET"]),
            Route(f"{PATH}/logout", self.logout, methods=["POST"]),
            Route(f"{PATH}/connect/token", self.connect_token, methods=["POST"]),
            Route(f"{PATH}/accounts", self.accounts, methods=["GET"]),
            Route(f"{PATH}/accounts/connect", self.connect, methods=["POST"]),
            Route(f"{PATH}/accounts/disconnect", self.disconnect, methods=["POST"]),
            Route(f"{PATH}/accounts/keys", self.set_keys, methods=["POST"]),
            Route(f"{PATH}/tokens", self.tokens, methods=["GET"]),
            Route(f"{PATH}/tokens", self.create_token, methods=["POST"]),
            Route(f"{PATH}/tokens/revoke", self.revoke_token, methods=["POST"]),
            Route(f"{PATH}/static/console.css", self.stylesheet, methods=["GET"]),
            *self.admin_routes(),
            *self.session_routes(),
            *self.people_routes(),
            *self.schedule_routes(),
            *self.profile_routes(),
            *self.usage_routes(),
        ]

    # -- sign-in and out

    async def home(self, request: Request) -> Response:
        token = request.query_params.get("token")
        if token is not None:
            if self.sign_in is not None or not await self.sessions.redeem_link(token):
                why = "This link was used already, has expired, or is not one this Jarvis made."
                return self._page(request, "refused.html", {"why": why}, status=403)
            session = await self.sessions.open(LOCAL)
            return await self._with_session(RedirectResponse(f"{PATH}/", 303, headers=HEADERS), session)
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        return self._page(request, "connect.html", await self._connect(who[1]), who=who)

    async def start_sign_in(self, request: Request) -> Response:
        if self.sign_in is None:
            return await self._signed_out(request)
        started = await self.sign_in.start(SIGN_IN_PURPOSE, {})
        return started.set_on(RedirectResponse(started.url, 303, headers=HEADERS), await self._secure())

    async def identified(self, identity: Identity, _: dict[str, Any]) -> Response:
        """The team's provider signed the browser in (oauth/server/browser.py): its console session."""
        session = await self.sessions.open(identity.subject)
        return await self._with_session(RedirectResponse(f"{PATH}/", 303, headers=HEADERS), session)

    async def logout(self, request: Request) -> Response:
        checked = await self._form(request)
        if isinstance(checked, Response):
            return checked
        await self.sessions.close(checked[0].id)
        response = RedirectResponse(f"{PATH}/", 303, headers=HEADERS)
        response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="lax", secure=await self._secure())
        return response

    # -- Connect a client

    async def _surfaces(self, principal: Principal, made: tuple[str, str] | None = None) -> list[dict[str, Any]]:
        """Each surface the person may use, with its config for each client. `made`: a path and the secret of the
        token just made for it, which its configs then carry (shown this once)."""
        base = await self.base_url()
        placeholder = "<your token>" if self.tokens_required and self.sign_in is None else None
        answer = []
        for path in self.paths():
            name = self.surface_at(path)
            if name is not None and principal.may_use_surface(name):
                url = base + path
                entry = _entry_name(path, name)
                secret = made[1] if made is not None and made[0] == path else None
                links = install_links(entry, url) if placeholder is None and secret is None else []
                answer.append(
                    {
                        "name": name,
                        "path": path,
                        "url": url,
                        "snippets": snippets(entry, url, secret or placeholder),
                        "links": links,
                        "secret": secret,
                    }
                )
        return answer

    async def _connect(
        self, principal: Principal, made: tuple[str, str] | None = None, error: str = ""
    ) -> dict[str, Any]:
        surfaces = await self._surfaces(principal, made)
        return {"surfaces": surfaces, "may_token": self.calls.may(principal, "token", "create"), "error": error}

    async def connect_token(self, request: Request) -> Response:
        """A token for one surface's configs, as the person's own (My tokens lists it): the `token` tool's create,
        with what the person holds of that surface, so a client that cannot sign in (or a config pasted on a
        machine without a browser) works at once."""
        checked = await self._form(request)
        if isinstance(checked, Response):
            return checked
        session, principal, form = checked
        path = field(form, "surface")
        name = self.surface_at(path) if path in self.paths() else None
        if name is None:
            values = await self._connect(principal, error="This Jarvis serves no such surface.")
            return self._page(request, "connect.html", values, status=400, who=(session, principal))
        wanted = [f"profile:{name}"] if path.startswith(PROFILE_PATH_PREFIX) else [name]
        arguments = {
            "action": "create",
            "name": f"{_entry_name(path, name)} config",
            "scope": " ".join(narrowed(principal.scopes, wanted)),
        }
        answer = await self.calls.call(principal, "token", arguments)
        made = (path, str(answer.payload["secret"])) if answer.ok else None
        values = await self._connect(principal, made, error=answer.error)
        return self._page(request, "connect.html", values, status=200 if answer.ok else 400, who=(session, principal))

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
            return RedirectResponse(str(answer.payload["link"]), 303, headers=HEADERS)
        note = answer.error or str((answer.payload or {}).get("next", ""))
        values = await self._accounts(principal, note=note)
        return self._page(request, "accounts.html", values, status=200 if answer.ok else 400, who=(session, principal))

    async def disconnect(self, request: Request) -> Response:
        return await self._act(request, DISCONNECT, self._accounts, "accounts.html")

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
        # The scopes offered are the person's own: a token may do no more than its maker.
        offered = ADMIN_OFFER if principal.sees_everything else principal.scopes
        return {
            "tokens": listed.payload.get("tokens", []) if listed.ok else [],
            "offered": offered,
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
        return await self._act(request, REVOKE, self._tokens, "tokens.html")


def _entry_name(path: str, surface: str) -> str:
    """The name `jarvis client edit` gives a client's entry for it (the registry's clients/entries.py): jarvis for
    the jarvis surface, jarvis-<surface> or jarvis-<profile> for the others."""
    if path.startswith(PROFILE_PATH_PREFIX):
        return "jarvis-" + path.removeprefix(PROFILE_PATH_PREFIX)
    return "jarvis" if surface == "jarvis" else f"jarvis-{surface}"
