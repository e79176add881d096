"""`jarvis_profile`: named sets of servers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream.hosting import report
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.registry import ProfileDeleted, ProfileSuggestion, ProfileView
from jarvis.common.errors import InvalidArgument
from jarvis.common.params import Arg, Named, NoParams


@dataclass(frozen=True)
class Create:
    name: str
    servers: list[str] = field(default_factory=list)
    description: str = ""


@dataclass(frozen=True)
class Edit:
    name: str
    add: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    description: str | None = None
    new_name: str | None = None


@dataclass(frozen=True)
class Suggest:
    path: Annotated[str, Arg("project dir")] = ""


@dataclass(frozen=True)
class Restart:
    name: str = ""


@dataclass(frozen=True)
class ProfileList:
    profiles: list[ProfileView]
    count: int


@dataclass(frozen=True)
class Created:
    created: ProfileView


@dataclass(frozen=True)
class Edited:
    edited: ProfileView


@dataclass(frozen=True)
class Deleted:
    deleted: ProfileDeleted


@dataclass(frozen=True)
class Suggested:
    project: str
    suggestions: list[ProfileSuggestion]
    detected: list[str]
    clients_detected: list[str]


@dataclass(frozen=True)
class ProfileRestart:
    profile: str
    servers: list[report.RestartOutcome]


@dataclass(frozen=True)
class Restarted:
    restarted: list[ProfileRestart]


def build(ctx: ToolContext) -> Tool:
    registry = ctx.registry

    async def list_(_: NoParams, __: Principal) -> ProfileList:
        profiles = await registry.list_profiles()
        return ProfileList(profiles=profiles, count=len(profiles))

    async def create(p: Create, _: Principal) -> Created:
        created = await registry.create_profile(p.name, p.description, p.servers)
        await report.refresh(ctx.downstream)  # its surface exists from now on
        return Created(created)

    async def edit(p: Edit, _: Principal) -> Edited:
        if p.new_name is None and p.description is None and not p.add and not p.remove:
            raise InvalidArgument("jarvis_profile action=edit needs add, remove, new_name or description")
        edited = await registry.edit_profile(
            p.name, add=p.add, remove=p.remove, new_name=p.new_name, description=p.description
        )
        await report.refresh(ctx.downstream)  # membership changes reach connected sessions now
        return Edited(edited)

    async def delete(p: Named, _: Principal) -> Deleted:
        deleted = await registry.delete_profile(p.name)
        await report.refresh(ctx.downstream)
        return Deleted(deleted)

    async def suggest(p: Suggest, _: Principal) -> Suggested:
        path = p.path or str(ctx.project_root)
        found = await registry.suggest_profiles(path)
        return Suggested(path, found.suggestions, found.detected, found.clients_detected)

    async def restart(p: Restart, _: Principal) -> Restarted:
        profiles = [await registry.get_profile(p.name)] if p.name else await registry.list_profiles()
        # A server in several profiles restarts once; each profile reports its servers' outcomes.
        names = sorted({n for profile in profiles for n in profile.servers})
        outcomes = {o.name: o for o in await report.restart(ctx.downstream, names)}
        return Restarted([ProfileRestart(profile.name, [outcomes[n] for n in profile.servers]) for profile in profiles])

    return Tool(
        name="jarvis_profile",
        description="Profiles: list|create|edit|delete|suggest|restart",
        summary=(
            "Profiles, named sets of MCP servers served together at their own endpoint: list, create, add or remove "
            "servers, delete, suggest one for a project, restart its servers."
        ),
        actions=[
            Action("list", list_, NoParams, read_only=True, idempotent=True),
            Action("create", create, Create),
            Action("edit", edit, Edit),
            Action("delete", delete, Named, destructive=True),
            Action("suggest", suggest, Suggest, read_only=True, idempotent=True),
            Action("restart", restart, Restart),
        ],
    )
