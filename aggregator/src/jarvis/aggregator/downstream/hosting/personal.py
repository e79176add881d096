"""A connection per person to each server its people authorize at with their own accounts (`servers.oauth`).

Each (server, person) gets a ServerHost of its own whose HTTP client carries that person's OAuth client
(provider.py): their access token on every request, refreshed ahead of expiry, the vault kept current. A person
without tokens (never connected, refresh token no longer taken, disconnected) is asked to consent first
(`NeedsConsent`, which the proxy turns into a URL elicitation or a tool error with the link). Idle connections are
stopped like any server's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.shared.auth import AuthorizationCodeResult
from mcp.shared.dispatcher import ProgressFnT

from jarvis.aggregator.downstream.auth.consent import ConsentFailed, Consents, NeedsConsent
from jarvis.aggregator.downstream.auth.guard import OAuthClientSettings
from jarvis.aggregator.downstream.auth.provider import PersonalOAuth
from jarvis.aggregator.downstream.auth.relay import ConsentRelay
from jarvis.aggregator.downstream.auth.storage import GrantStore, VaultStorage
from jarvis.aggregator.downstream.hosting.keyed import KeyedServers
from jarvis.aggregator.downstream.hosting.lists import Lists
from jarvis.aggregator.downstream.hosting.supervisor import HostOptions, ServerHost, ToolsLoader
from jarvis.aggregator.downstream.hosting.tools import ServedTools
from jarvis.aggregator.downstream.transport.connection import LaunchPlan
from jarvis.aggregator.downstream.transport.relay import Caller
from jarvis.common.errors import FailedPrecondition, JarvisError

log = logging.getLogger(__name__)

CONNECTED, EXPIRED, NEEDS_CONSENT = "connected", "expired", "needs consent"
PER_PERSON_STATE = "per person"  # a server's state where each person has a connection of their own
ListsChanged = Callable[[str, Lists], None]
PER_PERSON = (
    "each person uses server '{server}' with their own account or keys: a call asks for your authorization "
    "(`jarvis_server action=connect name={server}`) or your keys (`action=connect`), then runs on your own instance"
)


class _ConsentFirst(httpx2.HTTPError):
    """Raised inside a connection's HTTP client when the server wants an authorization the person has not given."""


@dataclass(frozen=True)
class Connection:
    server: str
    state: str  # connected, expired (a refresh will renew it), needs consent
    expires_at: int


class PersonalServers:
    def __init__(
        self,
        store: GrantStore | None,
        options: HostOptions,
        load_tools: ToolsLoader,
        settings: OAuthClientSettings | None = None,
        lists_changed: ListsChanged = lambda server, lists: None,
        base_url: Callable[[], Awaitable[str]] | None = None,
        redis_url: str = "",
    ) -> None:
        self.store = store
        # Jarvis's public URL, where browsers come back after consent (the shares' base URL, set by the composer).
        self.base_url: Callable[[], Awaitable[str]] = base_url or _loopback
        self.options = options
        self.settings = settings or OAuthClientSettings()
        self._load_tools = load_tools
        # A person's connection that learned its tools tells the profiles holding its server (their lists change).
        self._lists_changed = lists_changed
        self.plans: dict[str, LaunchPlan] = {}  # the servers people authorize at, by name
        self.clients: dict[str, dict[str, str]] = {}  # pre-registered clients (servers.oauth_clients), by server
        self.hosts: dict[tuple[str, str], ServerHost] = {}
        self.keyed = KeyedServers(store, options, load_tools)  # per-person API keys (servers.per_person)
        self._learning: set[asyncio.Task[None]] = set()  # connections starting after a consent
        self.consents = (
            Consents(
                store,
                self._url_of,
                self.settings,
                on_connected=self._connected,
                client_of=lambda s: self.clients.get(s),
            )
            if store is not None
            else None
        )
        # Where Jarvis has Redis (several workers, replicas), a consent's link or return may reach another process.
        self.relay = ConsentRelay(redis_url, self.consents) if redis_url and self.consents is not None else None

    def _url_of(self, server: str) -> str | None:
        plan = self.plans.get(server)
        return plan.url if plan is not None and plan.transport == "streamable-http" else None

    def serves(self, server: str) -> bool:
        return server in self.plans or self.keyed.serves(server)

    def running(self, server: str) -> int:
        """People's instances or connections of `server` not stopped (a metric)."""
        own = sum(1 for (name, _), host in self.hosts.items() if name == server and host.state != "stopped")
        return own + self.keyed.running(server)

    @staticmethod
    def plans_of(planned: dict[str, LaunchPlan | str]) -> dict[str, LaunchPlan]:
        """The plans of servers people authorize at: streamable-HTTP ones (others cannot be authorized at)."""
        return {
            name: plan
            for name, plan in planned.items()
            if isinstance(plan, LaunchPlan) and plan.transport == "streamable-http"
        }

    async def set_plans(
        self,
        planned: dict[str, LaunchPlan | str],
        oauth: tuple[str, ...],
        keyed: dict[str, list[str]],
        clients: dict[str, dict[str, str]] | None = None,
    ) -> None:
        """The servers people authorize at (`oauth`) or give their keys to (`keyed`), how to reach them, and the clients
        registered ahead at them (`clients`); connections of changed ones are stopped."""
        self.clients = clients or {}
        await self.keyed.set_plans(planned, keyed)
        plans = self.plans_of({name: plan for name, plan in planned.items() if name in oauth})
        for (server, person), host in list(self.hosts.items()):
            if plans.get(server) != self.plans.get(server):
                self.hosts.pop((server, person), None)
                await host.stop("launch spec changed")
        self.plans = plans

    def _connected(self, server: str, person: str) -> None:
        """A consent finished: the person's connection starts anew (a failed start keeps a backoff) and learns its
        tools at once, so their next tools/list holds them without a call first."""
        host = self.hosts.pop((server, person), None)
        loop = asyncio.get_running_loop()

        async def reconnect() -> None:
            if host is not None:
                await host.stop()
            await self.learn(server, person)

        self._learning.add(task := loop.create_task(reconnect(), name=f"connect-{server}"))
        task.add_done_callback(self._learning.discard)

    def tools_for(self, server: str, person: str) -> ServedTools | None:
        """The tools `server` lists on `person`'s own connection, while it is up; None otherwise."""
        host = self.hosts.get((server, person))
        return host.tools if host is not None and host.connection is not None else None

    async def learn(self, server: str, person: str, wait: float | None = None) -> None:
        """Start `person`'s own connection to `server` where they have authorized Jarvis, so its tools are listed as
        it lists them to them (and pinned for everyone else). Nothing for a person not connected; a failure is the
        connection's state, and their next call says what it is. With `wait`, return after that long: the start
        goes on, and the lists are told when it is up."""
        if server not in self.plans or not person or self.store is None:
            return
        storage = self._storage(server, person)
        if await storage.get_tokens() is None:
            return
        host = self._host(server, person, await self.base_url())
        starting = asyncio.ensure_future(host.ensure_running(self.options.init_timeout))
        done, _ = await asyncio.wait([starting], timeout=wait)
        if starting in done:
            with contextlib.suppress(JarvisError, httpx2.HTTPError):
                starting.result()
        else:
            starting.add_done_callback(lambda started: started.cancelled() or started.exception())

    def _storage(self, server: str, person: str) -> VaultStorage:
        if self.store is None:
            raise FailedPrecondition("this aggregator has no token vault (no registry): it cannot authorize people")
        return VaultStorage(self.store, person, server)

    def _host(self, server: str, person: str, base_url: str) -> ServerHost:
        host = self.hosts.get((server, person))
        if host is None:
            storage = self._storage(server, person)
            plan = self.plans[server]

            def auth() -> httpx2.Auth:
                return self._provider(plan.url, storage, base_url)

            personal = dataclasses.replace(plan, own_requests=False, auth=auth)
            host = ServerHost(server, personal, self.options, self._load_tools, self._lists_changed)
            self.hosts[(server, person)] = host
        return host

    def _provider(self, url: str, storage: VaultStorage, base_url: str) -> PersonalOAuth:
        async def no_browser(authorize_url: str) -> None:
            scope = parse_qs(urlsplit(authorize_url).query).get("scope", [""])[0]
            if scope:  # the scope the SDK would ask for now (a step-up's union): the next consent asks for it too
                await storage.want_scope(scope)
            await storage.forget_tokens()  # what it held is not taken any more: consent is needed again
            raise _ConsentFirst("the server needs this person's consent")

        async def never() -> AuthorizationCodeResult:
            raise _ConsentFirst("the server needs this person's consent")

        assert self.consents is not None
        return PersonalOAuth(
            url,
            storage,
            self.consents.redirect_uri(base_url),
            redirect_handler=no_browser,
            callback_handler=never,
            client_metadata_url=self.consents.client_id_url(base_url),
            refresh_ahead=self.settings.refresh_ahead_seconds,
        )

    async def consent(self, server: str, person: str) -> NeedsConsent:
        """A consent for (server, person), under way or new, as the error that carries its link."""
        if not person:
            raise FailedPrecondition(
                f"server '{server}' is used with each person's own account, and this call has no person: call "
                "with a token of your own (or sign in)"
            )
        if self.consents is None:
            raise FailedPrecondition("this aggregator has no token vault (no registry): it cannot authorize people")
        try:
            flow = await self.consents.begin(person, server, await self.base_url())
        except ConsentFailed as exc:
            raise FailedPrecondition(str(exc)) from None
        return NeedsConsent(server, self.consents.link(flow), flow)

    async def call(
        self,
        server: str,
        person: str,
        params: dict[str, Any],
        progress: ProgressFnT | None = None,
        caller: Caller | None = None,
        caller_version: str | None = None,
        input_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A tools/call on the person's own connection; NeedsConsent when they must authorize first."""
        if self.keyed.serves(server):
            return await self.keyed.call(server, person, params, progress, caller, caller_version, input_schema)
        storage = self._storage(server, person) if person else None
        if storage is None or await storage.get_tokens() is None:
            raise await self.consent(server, person)
        host = self._host(server, person, await self.base_url())
        try:
            return await host.call(
                "tools/call", params, None, progress, caller, caller_version=caller_version, input_schema=input_schema
            )
        except (JarvisError, Exception) as exc:
            if await storage.get_tokens() is None:  # the server refused the person's tokens and refresh failed
                self.hosts.pop((server, person), None)
                await host.stop("consent needed")
                raise await self.consent(server, person) from None
            log.info("server %s: a person's call failed: %s", server, type(exc).__name__, extra={"server": server})
            raise

    async def connections(self, person: str) -> list[Connection]:
        """The state of each authorizing server's connection for `person` (no tokens, ever)."""
        states = {}
        if self.store is not None and person:
            states = {g.server: g for g in await self.store.states(person)}
        now = int(time.time())
        answer = []
        for server in sorted(self.plans):
            grant = states.get(server)
            if grant is None or not grant.has_tokens:
                answer.append(Connection(server, NEEDS_CONSENT, 0))
            elif grant.expires_at and grant.expires_at <= now:
                answer.append(Connection(server, EXPIRED if grant.refreshable else NEEDS_CONSENT, grant.expires_at))
            else:
                answer.append(Connection(server, CONNECTED, grant.expires_at))
        return answer

    async def disconnect(self, server: str, person: str) -> bool:
        """Forget the person's grant at the server and close their connection."""
        host = self.hosts.pop((server, person), None)
        if host is not None:
            await host.stop("disconnected")
        return bool(self.store is not None and await self.store.delete(person, server))

    def stop_idle(self, idle_seconds: float, spawn: Callable[[Coroutine[Any, Any, None]], object]) -> None:
        """Stop (in `spawn`'s background) the connections unused for `idle_seconds`."""
        now = time.monotonic()
        stale = [
            key
            for key, host in self.hosts.items()
            if host.in_flight == 0 and host.state != "stopped" and now - host.last_used > idle_seconds
        ]
        for key in stale:
            spawn(self.hosts.pop(key).stop(f"a person's connection idle for {idle_seconds:g} s"))
        self.keyed.stop_idle(idle_seconds, spawn)

    async def stop(self) -> None:
        for learning in list(self._learning):
            learning.cancel()
        await asyncio.gather(*self._learning, return_exceptions=True)
        await self.keyed.stop()
        hosts, self.hosts = list(self.hosts.values()), {}
        await asyncio.gather(*(h.stop() for h in hosts), return_exceptions=True)
        close = getattr(self.store, "close", None)  # the vault's channel, once nothing uses it
        if close is not None:
            await close()


async def _loopback() -> str:
    return "http://127.0.0.1"
