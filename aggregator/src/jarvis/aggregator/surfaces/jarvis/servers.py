"""`jarvis_server`: installed MCP servers and the catalog, through the registry."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream.hosting import report
from jarvis.aggregator.gateways.registry import ServerEdit
from jarvis.aggregator.surfaces.jarvis.server_connections import (
    Connect,
    Disconnected,
    YourConnection,
    YourKeys,
    connect,
    disconnect,
    set_keys,
    your_connection,
    your_keys,
)
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.registry import (
    AuditEntryView,
    LaunchView,
    SearchHitView,
    ServerUninstalled,
    ServerView,
    TransportName,
    UsageStatView,
)
from jarvis.common.errors import InvalidArgument, PermissionDenied
from jarvis.common.params import Arg, Named, NoParams
from jarvis.common.urls import masked_url, masked_urls

Limit = Annotated[int, Arg(minimum=1, maximum=100)]
# A null value unsets a variable (edit) or removes your key (connect), as edit's error and the README say; a
# description in the schema would put the jarvis surface's listing over its 4000-byte budget.
Env = dict[str, str | None] | None

# Parameters


@dataclass(frozen=True)
class Install:
    name: str
    new_name: str = ""
    env: Env = None
    # An entry that serves directories (filesystem): those to serve; none given, the project roots. The schema's
    # one `args` (create's and edit's too) keeps the jarvis surface's listing within its budget.
    args: list[str] | None = None


@dataclass(frozen=True)
class Search:
    query: str
    limit: Limit = 0  # 0: the registry's default


@dataclass(frozen=True)
class Create:
    name: str
    type: TransportName
    command: str = ""
    args: list[str] | None = None
    env: Env = None
    url: str = ""
    image: str = ""
    description: str = ""


@dataclass(frozen=True)
class Edit:
    name: str
    new_name: str | None = None
    description: str | None = None
    command: str | None = None
    args: list[str] | None = None
    env: Env = None
    url: str | None = None
    image: str | None = None


@dataclass(frozen=True)
class Usage:
    name: str = ""
    audit: bool = False
    query: str = ""  # with audit: a token id or name
    limit: Limit = 100


# Results


@dataclass(frozen=True)
class ServerSummary:
    name: str
    transport: str
    status: str
    tools: int
    profiles: list[str]
    launch: str
    description: str
    # What this aggregator knows of the running server (downstream/hosting/report.py `brief`).
    uptime_seconds: float | None = None
    last_error: str | None = None
    quarantined: list[str] | None = None


@dataclass(frozen=True)
class ServerList:
    servers: list[ServerSummary]
    count: int


@dataclass(frozen=True)
class ServerInfo(ServerView):
    runtime: report.RuntimeReport | None = None  # the hosting aggregator's report
    # Where each person uses the server with their own account (servers.oauth): the caller's authorization there.
    your_connection: YourConnection | None = None
    your_keys: YourKeys | None = None  # where its env variables or headers are per person (servers.per_person)


@dataclass(frozen=True)
class Installed:
    installed: ServerView
    note: str | None = None  # what the install chose: the directories a filesystem server serves


@dataclass(frozen=True)
class Uninstalled:
    uninstalled: ServerUninstalled


@dataclass(frozen=True)
class SearchResults:
    query: str
    results: list[SearchHitView]


@dataclass(frozen=True)
class Created:
    created: ServerView


@dataclass(frozen=True)
class Edited:
    edited: ServerView


@dataclass(frozen=True)
class UsageReport:
    """Either the usage counts or, with audit=true, the audit log."""

    usage: list[UsageStatView] | None = None
    audit: list[AuditEntryView] | None = None


# What a launch env or header value shows instead of itself: secrets live there.
SET, EMPTY = "<set>", "<empty>"
# A whole-value `${NAME}` reference, which the host resolves from Jarvis's own environment (downstream/hosting/host.py).
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")


def masked(values: Mapping[str, str]) -> dict[str, str]:
    """Names, and for each value only whether it is set, or the `${NAME}` it refers to (never a secret)."""
    return {name: value if _REFERENCE.match(value) else (SET if value else EMPTY) for name, value in values.items()}


def _masked(server: ServerView) -> ServerView:
    """Env and header values, and the URL's credentials, masked for every caller, admin included: results end
    up in transcripts."""
    launch = server.launch
    last_error = masked_urls(server.last_error)
    if launch is None:
        return dataclasses.replace(server, last_error=last_error)
    return dataclasses.replace(
        server,
        launch=dataclasses.replace(
            launch, env=masked(launch.env), headers=masked(launch.headers), url=masked_url(launch.url)
        ),
        last_error=last_error,
    )


def _where(launch: LaunchView | None) -> tuple[str, str]:
    """A launch's transport as agents name it, and where it runs (URL, image or command line)."""
    if launch is None:
        return "unspecified", ""
    transport = launch.transport.removeprefix("TRANSPORT_").lower().replace("_", "-")
    return transport, launch.url or launch.image or " ".join([launch.command, *launch.args]).strip()


def _summary(server: ServerView, running: report.Running) -> ServerSummary:
    """The registry knows what is installed; `running` (this aggregator's `report.brief`) what runs."""
    transport, where = _where(server.launch)
    return ServerSummary(
        name=server.name,
        transport=transport,
        status=running.status,
        tools=running.tools if running.tools is not None else len(server.tools),
        profiles=server.profiles,
        launch=where,
        description=server.description,
        uptime_seconds=running.uptime_seconds,
        last_error=running.last_error,
        quarantined=running.quarantined,
    )


def changes_of(values: Mapping[str, str | None] | None) -> tuple[dict[str, str], list[str]]:
    """A tool's `{name: value}` edit: the names to set, and those to remove (null values)."""
    return _set_values(values), [k for k, v in (values or {}).items() if v is None]


def _set_values(env: Mapping[str, str | None] | None) -> dict[str, str]:
    return {k: v for k, v in (env or {}).items() if v is not None}


@dataclass(frozen=True)
class Servers:
    """The handlers, over the context they reach."""

    ctx: ToolContext

    def _shown(self, server: ServerView) -> ServerView:
        """`server` masked, with the status this aggregator's host gives it (as `list` and `info` show it), not the
        placeholder the registry stores for a server it does not run itself."""
        return dataclasses.replace(_masked(server), status=report.brief(self.ctx.downstream, server.name).status)

    async def _changed(self) -> None:
        """The hosted servers follow the registry now; discovery re-reads the catalog."""
        await report.refresh(self.ctx.downstream)
        await self.ctx.events.catalog_changed.emit(None)

    async def list_(self, _: NoParams, __: Principal) -> ServerList:
        servers = await self.ctx.registry.list_servers()
        summaries = [_summary(_masked(s), report.brief(self.ctx.downstream, s.name)) for s in servers]
        return ServerList(servers=summaries, count=len(servers))

    async def info(self, p: Named, principal: Principal) -> ServerInfo:
        server = _masked(await self.ctx.registry.get_server(p.name))
        runtime = await report.detail(self.ctx.downstream, self.ctx.registry, server.name)
        fields = {f.name: getattr(server, f.name) for f in dataclasses.fields(server)}
        mine = await your_connection(self.ctx, server.name, principal)
        keys = await your_keys(self.ctx, server.name, principal)
        status = {**fields, "status": runtime.state}
        return ServerInfo(**status, runtime=runtime, your_connection=mine, your_keys=keys)

    async def connect(self, p: Install, principal: Principal) -> Connect:
        """Your own account (servers.oauth: the consent link) or, with env, your own keys (servers.per_person)."""
        if p.env is not None:
            return await set_keys(self.ctx, p.name, p.env, principal)
        return await connect(self.ctx, Named(name=p.name), principal)

    async def disconnect(self, p: Named, principal: Principal) -> Disconnected:
        return await disconnect(self.ctx, p, principal)

    async def install(self, p: Install, _: Principal) -> Installed:
        done = await self.ctx.registry.install_server(p.name, p.new_name, _set_values(p.env), p.args or [])
        await self._changed()
        return Installed(self._shown(done.server), done.note or None)

    async def uninstall(self, p: Named, _: Principal) -> Uninstalled:
        uninstalled = await self.ctx.registry.uninstall_server(p.name)
        await self._changed()  # stops it
        return Uninstalled(uninstalled)

    async def search(self, p: Search, _: Principal) -> SearchResults:
        return SearchResults(query=p.query, results=await self.ctx.registry.search_servers(p.query, p.limit))

    async def create(self, p: Create, _: Principal) -> Created:
        created = await self.ctx.registry.create_server(
            p.name,
            p.description,
            p.type,
            command=p.command,
            args=p.args or [],
            env=_set_values(p.env),
            url=p.url,
            image=p.image,
        )
        await self._changed()
        return Created(self._shown(created))

    async def edit(self, p: Edit, _: Principal) -> Edited:
        changes = (p.new_name, p.description, p.command, p.url, p.image, p.args, p.env)
        if all(c is None for c in changes):
            raise InvalidArgument(
                "jarvis_server action=edit needs something to change: new_name, description, command, "
                "args, env (a null value removes a variable), url or image"
            )
        set_env, unset_env = changes_of(p.env)
        edit = ServerEdit(
            name=p.name,
            new_name=p.new_name,
            description=p.description,
            command=p.command,
            url=p.url,
            image=p.image,
            args=p.args,
            set_env=set_env,
            unset_env=unset_env,
        )
        return await self.apply(edit)

    async def apply(self, edit: ServerEdit) -> Edited:
        """An edit made in the registry, then followed: a changed launch spec restarts the server."""
        edited = await self.ctx.registry.edit_server(edit)
        await self._changed()
        return Edited(self._shown(edited))

    async def usage(self, p: Usage, principal: Principal) -> UsageReport:
        await self.ctx.usage.flush()
        if p.audit:
            return await self.audit_log(p, principal)
        return UsageReport(usage=await self.ctx.registry.usage(p.name))

    async def audit_log(self, p: Usage, principal: Principal) -> UsageReport:
        # Who called what is everyone's business only with admin, though `usage` itself is a read.
        if not principal.may("jarvis", "jarvis_server", "usage", read_only=False, admin=True):
            raise PermissionDenied("jarvis_server action=usage audit=true needs a token with the admin scope")
        return UsageReport(audit=await self.ctx.registry.audit(p.name, p.query, p.limit))


def build(ctx: ToolContext) -> Tool:
    h = Servers(ctx)
    return Tool(
        name="jarvis_server",
        # Within 60 characters every action is named: "uninstall" names install, "disconnect" connect.
        description="list|info|uninstall|search|edit|create|usage|disconnect",
        summary=(
            "MCP servers: list the installed ones, show one, install one from the catalog, uninstall, search the "
            "catalog, register or edit a server, its call counts and audit, your own credentials for it."
        ),
        actions=[
            Action("list", h.list_, NoParams, read_only=True, idempotent=True),
            Action("info", h.info, Named, read_only=True, idempotent=True),
            Action("install", h.install, Install, admin=True),
            Action("uninstall", h.uninstall, Named, destructive=True),
            Action("search", h.search, Search, read_only=True, idempotent=True),
            Action("edit", h.edit, Edit, admin=True),
            Action("create", h.create, Create, admin=True),
            Action("usage", h.usage, Usage, read_only=True, idempotent=True),
            Action("connect", h.connect, Install),  # your own account or keys (servers.oauth, servers.per_person)
            Action("disconnect", h.disconnect, Named, idempotent=True),
        ],
    )
