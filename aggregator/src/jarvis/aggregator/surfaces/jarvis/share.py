"""`jarvis_share`: expose one installed server at its own URL with a token valid for that share only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream.proxy.shares import Shares
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.common.errors import FailedPrecondition
from jarvis.common.params import Arg, Named, NoParams

# What the share keeper (downstream/proxy/shares.py) reports: the share's URL, token, expiry, uses and its tunnel's
# own fields, which depend on the tunnel kind.
ShareReport = dict[str, Any]


@dataclass(frozen=True)
class Start:
    name: str
    expires_in: Annotated[int | None, Arg("seconds", minimum=60)] = None  # None: share.default_expiry_seconds
    tunnel: str = ""
    port: int | None = None  # the tunnel's port on the far host
    host_key: str | None = None


@dataclass(frozen=True)
class Started:
    started: ShareReport


@dataclass(frozen=True)
class ShareList:
    shares: list[ShareReport]


def _name(name: str) -> str:
    return name.strip().lower()


def build(ctx: ToolContext) -> Tool:
    def shares() -> Shares:
        if ctx.shares is None:
            raise FailedPrecondition(
                "sharing needs a running aggregator (jarvis up or jarvis serve aggregator); "
                "this process does not serve HTTP"
            )
        return ctx.shares

    async def start(p: Start, _: Principal) -> Started:
        return Started(await shares().start(_name(p.name), p.expires_in, p.tunnel or "none", p.port, p.host_key))

    async def stop(p: Named, _: Principal) -> ShareReport:
        return await shares().stop(_name(p.name))

    async def list_(_: NoParams, __: Principal) -> ShareList:
        return ShareList(await shares().listing())

    return Tool(
        name="jarvis_share",
        description="Share a server: start|stop|list",
        summary=(
            "Share one of your MCP servers with someone outside this machine: start a share with an expiring link, "
            "optionally over an SSH tunnel, stop it, list the shares running."
        ),
        actions=[
            Action("start", start, Start, admin=True),
            Action("stop", stop, Named, destructive=True),
            Action("list", list_, NoParams, read_only=True, idempotent=True),
        ],
    )
