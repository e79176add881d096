"""`user` and `role`: the people who sign in and the roles that give them scopes (issue 31 item 3).

Every action is an admin's: listing shows people's emails and groups, and a role decides what each person may do.
The same operations as `jarvis user …` and `jarvis role …` (oauth/server/admin.py, reached as context.PeopleEditor),
on the `admin` surface (decision 0069), so `jarvis` and `orchestrator` keep the tools their specs name.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from jarvis.aggregator.context import PeopleEditor, RoleRecord, ToolContext
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.common.errors import FailedPrecondition
from jarvis.common.params import Arg

NO_REGISTRY = "people and roles live in the registry, which this aggregator does not reach; nothing was changed"
WHO = Arg("subject or email")


@dataclass(frozen=True)
class UserView:
    subject: str
    email: str
    name: str
    groups: list[str]
    first_seen: int
    last_seen: int
    disabled: bool
    scopes: list[str] = field(default_factory=list)  # what their roles give them now (in a listing)


@dataclass(frozen=True)
class UserList:
    users: list[UserView]
    count: int


@dataclass(frozen=True)
class ListUsers:
    disabled_only: bool = False


@dataclass(frozen=True)
class Who:
    who: Annotated[str, WHO]


@dataclass(frozen=True)
class UserChanged:
    user: UserView
    note: str


@dataclass(frozen=True)
class RoleView:
    name: str
    groups: list[str]
    users: list[str]
    scopes: list[str]


@dataclass(frozen=True)
class RoleList:
    roles: list[RoleView]
    count: int


@dataclass(frozen=True)
class ListRoles:
    pass


@dataclass(frozen=True)
class SetRole:
    name: str
    scopes: Annotated[list[str], Arg("Jarvis scopes, e.g. jarvis, orchestrator@<project_id>, read")]
    groups: Annotated[list[str] | None, Arg("identity-provider groups")] = None
    users: Annotated[list[str] | None, Arg("subjects or emails")] = None


@dataclass(frozen=True)
class RoleName:
    name: str


@dataclass(frozen=True)
class RoleDeleted:
    deleted: str
    note: str


def user_view(body: dict[str, Any]) -> UserView:
    return UserView(
        subject=str(body.get("subject", "")),
        email=str(body.get("email", "")),
        name=str(body.get("name", "")),
        groups=[str(g) for g in body.get("groups", ())],
        first_seen=int(body.get("first_seen") or 0),
        last_seen=int(body.get("last_seen") or 0),
        disabled=bool(body.get("disabled")),
    )


def role_view(role: RoleRecord) -> RoleView:
    return RoleView(role.name, list(role.groups), list(role.users), list(role.scopes))


@dataclass(frozen=True)
class PeopleActions:
    ctx: ToolContext

    @property
    def admin(self) -> PeopleEditor:
        if self.ctx.people is None:
            raise FailedPrecondition(NO_REGISTRY)
        return self.ctx.people

    async def list_users(self, p: ListUsers, _: Principal) -> UserList:
        bodies = await self.admin.users()
        users = [user_view(body) for body in bodies]
        users = [u for u in users if u.disabled] if p.disabled_only else users
        # Each person's effective scopes, as the authorization server computes them at their next token.
        scopes = await self.admin.scopes_of(bodies)
        users = [replace(u, scopes=list(scopes.get(u.subject, ()))) for u in users]
        return UserList(users, len(users))

    async def disable(self, p: Who, _: Principal) -> UserChanged:
        body = await self.admin.set_disabled(p.who, True)
        return UserChanged(
            user_view(body),
            "refresh tokens revoked and downstream grants forgotten; access tokens, agent credentials and MCP "
            "sessions stop on every replica within the token cache's life (5 s by default)",
        )

    async def enable(self, p: Who, _: Principal) -> UserChanged:
        body = await self.admin.set_disabled(p.who, False)
        return UserChanged(user_view(body), "they may sign in again; tokens issued before the disable stay refused")

    async def list_roles(self, _p: ListRoles, _: Principal) -> RoleList:
        roles = [role_view(role) for role in await self.admin.roles()]
        return RoleList(roles, len(roles))

    async def set_role(self, p: SetRole, _: Principal) -> RoleView:
        return role_view(await self.admin.set_role(p.name, p.groups or (), p.users or (), p.scopes))

    async def delete_role(self, p: RoleName, _: Principal) -> RoleDeleted:
        await self.admin.delete_role(p.name)
        return RoleDeleted(p.name, "its people keep no scope from it from their next token on")


def build(ctx: ToolContext) -> list[Tool]:
    a = PeopleActions(ctx)
    return [
        Tool(
            name="user",
            description="People who signed in: list|disable|enable",
            summary=(
                "People who have signed in to Jarvis through the team's identity provider: list them, disable one "
                "(their sessions and tokens stop working), enable one again."
            ),
            actions=[
                Action("list", a.list_users, ListUsers, read_only=True, idempotent=True, admin=True),
                Action("disable", a.disable, Who, destructive=True, idempotent=True, admin=True),
                Action("enable", a.enable, Who, idempotent=True, admin=True),
            ],
        ),
        Tool(
            name="role",
            description="Sign-in roles, groups to scopes: list|set|delete",
            summary=(
                "Sign-in roles, which give people scopes by their identity provider groups or by name: list them, "
                "set one, delete one."
            ),
            actions=[
                Action("list", a.list_roles, ListRoles, read_only=True, idempotent=True, admin=True),
                Action("set", a.set_role, SetRole, idempotent=True, admin=True),
                Action("delete", a.delete_role, RoleName, destructive=True, idempotent=True, admin=True),
            ],
        ),
    ]
