"""What a proxy surface serves, by kind: the servers of a profile (`/mcp/profile/<name>`), or one shared server
(`/share/<server>/mcp`). One object per kind answers every question whose answer depends on the kind: which servers
a name stands for, under which tool names, who may call what, who may come in at all, what a call leaves behind."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from jarvis.aggregator.calls.routes import scope_refusal
from jarvis.aggregator.downstream.hosting.exposure import ExposedTool
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.proxy.shares import REQUEST, Shares
from jarvis.aggregator.tooling.principal import Principal

PROFILE, SHARE = "profile", "share"
SERVERS = "servers"  # the scope surface that grants a downstream server's tools wherever they are served


class Targets(ABC):
    """The targets of one kind of proxy surface; `name` is the kind, as scopes, metrics and the audit name it."""

    name: str
    require_token: bool  # even on loopback

    def __init__(self, host: DownstreamHost) -> None:
        self.host = host
        # `jarvis mcp --surface profile/NAME` serves one target over stdio, where no path names it.
        self.stdio_target: str | None = None

    @abstractmethod
    def servers_of(self, target: str) -> tuple[str, ...]: ...

    @abstractmethod
    def exists(self, target: str) -> bool: ...

    @abstractmethod
    def prefixed(self, target: str) -> bool:
        """Whether tool names carry their server's name (`<server>__<tool>`)."""

    @abstractmethod
    def changed(self, profiles: set[str], servers: set[str]) -> set[str]:
        """The targets of this kind among the profiles and servers whose lists may have changed."""

    @abstractmethod
    async def admit(self, principal: Principal, target: str) -> str | None:
        """Why `principal`, authenticated, may not use `target` at all (answered 403), or None."""

    def single_server(self, target: str) -> str | None:
        """The one server this target stands for, served under its own names (a share, an unprefixed profile)."""
        members = self.servers_of(target)
        return members[0] if len(members) == 1 and not self.prefixed(target) else None

    def tools(self, target: str, person: str = "") -> dict[str, ExposedTool]:
        """The target's tools as `person` sees them (their own connections' tools, for servers each person connects
        to); without a person, as anyone sees them."""
        return self.host.exposed(self.servers_of(target), self.prefixed(target), person)

    def may_call(self, principal: Principal, target: str, exposed: ExposedTool) -> bool:
        """`<kind>[:<target>[:<tool>]]`. Downstream annotations are the server's own claims (MCP says clients must
        not trust them), so `read` scopes never cover downstream tools."""
        return principal.may(self.name, target, exposed.name, read_only=False, admin=False)

    def refusal(self, principal: Principal, target: str, exposed: ExposedTool) -> str | None:
        """Why `principal` may not call `exposed` on `target`, naming the scopes that would allow it; None if they may.
        The gate and the call pipeline both ask this, so a refusal reads the same wherever it is made."""
        if self.may_call(principal, target, exposed):
            return None
        return scope_refusal(principal, exposed.name, f"{self.name} '{target}'", self.granting(target, exposed))

    def servers_granted(self, principal: Principal, target: str) -> tuple[str, ...]:
        """The servers of `target` whose resources, prompts and completions `principal` may use."""
        granted = principal.may(self.name, target, None, read_only=False, admin=False)
        return self.servers_of(target) if granted else ()

    def granting(self, target: str, exposed: ExposedTool) -> list[str]:
        """The scopes `may_call` accepts for this tool, narrowest first, for a refusal to name."""
        return [f"{self.name}:{target}:{exposed.name}", f"{self.name}:{target}", self.name, "admin"]

    def reaches(self, principal: Principal) -> bool:
        return principal.may_use_surface(self.name)

    def called(self, target: str, ok: bool, elapsed_ms: float) -> None:  # noqa: B027 - most kinds keep no count
        """A tool call on `target` ended."""

    def target_of(self, ctx: ServerRequestContext[Any]) -> str:
        request = ctx.request
        name = getattr(request, "path_params", {}).get("name") if request is not None else self.stdio_target
        if not isinstance(name, str) or not self.exists(name):
            raise MCPError(types.INVALID_PARAMS, f"no {self.name} named {name!r} on this aggregator")
        return name


class ProfileTargets(Targets):
    """Profiles: a grant of a server itself (`servers[:<server>[:<tool>]]`, as discovery's `tool_call` uses) counts
    on every profile that serves it."""

    name = PROFILE
    require_token = False

    def servers_of(self, target: str) -> tuple[str, ...]:
        return self.host.profiles.get(target, ())

    def exists(self, target: str) -> bool:
        return target in self.host.profiles

    def prefixed(self, target: str) -> bool:
        return self.host.prefixed(target)

    def changed(self, profiles: set[str], servers: set[str]) -> set[str]:
        return profiles

    async def admit(self, principal: Principal, target: str) -> str | None:
        """A profile made through another worker or replica a moment ago is looked up here, after authentication, so
        the gate checks its calls against its tools; the endpoint answers 404 if it is still unknown."""
        if not self.exists(target):
            await self.host.refresh_after_miss()
        return None

    def may_call(self, principal: Principal, target: str, exposed: ExposedTool) -> bool:
        return super().may_call(principal, target, exposed) or principal.may(
            SERVERS, exposed.server, exposed.tool.lower(), read_only=False, admin=False
        )

    def servers_granted(self, principal: Principal, target: str) -> tuple[str, ...]:
        """All of them with a grant of the whole profile, else those granted whole (`servers[:<server>]`); a grant of
        single tools covers those tools only."""
        whole = super().servers_granted(principal, target)
        if whole:
            return whole
        return tuple(
            s for s in self.servers_of(target) if principal.may(SERVERS, s, None, read_only=False, admin=False)
        )

    def granting(self, target: str, exposed: ExposedTool) -> list[str]:
        own = super().granting(target, exposed)[:-1]
        by_server = [f"{SERVERS}:{exposed.server}:{exposed.tool.lower()}", f"{SERVERS}:{exposed.server}", SERVERS]
        return [*own, *by_server, "admin"]

    def reaches(self, principal: Principal) -> bool:
        return super().reaches(principal) or principal.may_use_surface(SERVERS)


class ShareTargets(Targets):
    """Shares: one server handed to someone else, under its own names; its link always takes its token."""

    name = SHARE
    require_token = True

    def __init__(self, host: DownstreamHost, shares: Shares) -> None:
        super().__init__(host)
        self.shares = shares

    def servers_of(self, target: str) -> tuple[str, ...]:
        return (target,)

    def exists(self, target: str) -> bool:
        return target in self.host.hosts

    def prefixed(self, target: str) -> bool:
        return False

    def changed(self, profiles: set[str], servers: set[str]) -> set[str]:
        return servers

    async def admit(self, principal: Principal, target: str) -> str | None:
        share = await self.shares.active(target)
        if share is None:
            return f"'{target}' is not shared (the share was stopped, expired or never started)"
        if principal.token_id != share.token_id and not principal.may(SHARE, target, "", read_only=False, admin=True):
            return f"this token is not the token of the '{target}' share"
        if not self.exists(target):
            # A server installed through another replica a moment before its share was started: this host learns
            # of it at its next periodic read, and the link must work at once (the endpoint answers 404 otherwise).
            await self.host.refresh_after_miss()
        self.shares.count(share, REQUEST)
        return None

    def called(self, target: str, ok: bool, elapsed_ms: float) -> None:
        self.shares.count_call(target, ok, elapsed_ms)
