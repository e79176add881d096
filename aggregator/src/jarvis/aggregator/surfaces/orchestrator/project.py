"""`project`: create (optionally cloning a git source), list, get, delete; its secrets, which are write-only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import ProjectScoped, runtime
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.runtime import ProjectDeleted, ProjectView, SecretView
from jarvis.common import scopes as scope_rules
from jarvis.common.params import Arg, NoParams

AgentProtocol = Literal["stream-json", "codex-json", "gemini-json", "opencode-json", "text"]


@dataclass(frozen=True)
class Create:
    name: str
    agent: Annotated[str, Arg("claude|codex|gemini|opencode|aider")] = ""
    source_url: Annotated[str, Arg("git repo to clone")] = ""
    image: str = ""
    agent_command: list[str] = field(default_factory=list)
    agent_protocol: AgentProtocol | None = None
    network: bool = False
    egress_allow: Annotated[list[str], Arg("hosts agents may reach")] = field(default_factory=list)


@dataclass(frozen=True)
class SecretSet:
    project_id: str
    name: str
    value: Annotated[str, Arg("write-only")]


@dataclass(frozen=True)
class SecretNamed:
    project_id: str
    name: str


@dataclass(frozen=True)
class Created:
    created: ProjectView


@dataclass(frozen=True)
class ProjectList:
    projects: list[ProjectView]
    count: int


@dataclass(frozen=True)
class Deleted:
    deleted: ProjectDeleted


@dataclass(frozen=True)
class SecretStored:
    stored: SecretView


@dataclass(frozen=True)
class SecretList:
    secrets: list[SecretView]
    count: int


@dataclass(frozen=True)
class SecretDeleted:
    deleted: SecretView


@dataclass(frozen=True)
class ProjectActions:
    ctx: ToolContext

    async def create(self, p: Create, principal: Principal) -> Created:
        created = await runtime(self.ctx).create_project(
            p.name,
            source_url=p.source_url,
            image=p.image,
            agent_command=p.agent_command,
            agent_protocol=p.agent_protocol or "",
            network=p.network,
            egress_allow=p.egress_allow,
            agent=p.agent,
            # The token owns the project: the runtime caps a token's projects and running containers, not an admin's.
            created_by=principal.token_id,
            uncapped=principal.local or scope_rules.ADMIN in principal.scopes,
        )
        return Created(created)

    async def list_(self, _: NoParams, __: Principal) -> ProjectList:
        projects = await runtime(self.ctx).list_projects()
        return ProjectList(projects, len(projects))

    async def get(self, p: ProjectScoped, _: Principal) -> ProjectView:
        return await runtime(self.ctx).get_project(p.project_id)

    async def delete(self, p: ProjectScoped, _: Principal) -> Deleted:
        return Deleted(await runtime(self.ctx).delete_project(p.project_id))

    async def secret_set(self, p: SecretSet, _: Principal) -> SecretStored:
        return SecretStored(await runtime(self.ctx).set_secret(p.project_id, p.name, p.value))

    async def secret_list(self, p: ProjectScoped, _: Principal) -> SecretList:
        secrets = await runtime(self.ctx).list_secrets(p.project_id)
        return SecretList(secrets, len(secrets))

    async def secret_delete(self, p: SecretNamed, _: Principal) -> SecretDeleted:
        return SecretDeleted(await runtime(self.ctx).delete_secret(p.project_id, p.name))


def build(ctx: ToolContext) -> Tool:
    a = ProjectActions(ctx)
    return Tool(
        name="project",
        description="create|list|get|delete|secret_set|secret_list|secret_delete",
        summary=(
            "Projects, git repositories that Jarvis runs in containers: create one, list, get, delete, and set, "
            "list or delete the secrets its containers receive."
        ),
        actions=[
            # A project on the bridge network has no proxy, no allowlist, no internal-address refusal: admin only.
            Action(
                "create",
                a.create,
                Create,
                admin_if=lambda args: args.get("network") is True,
                admin_why=lambda _: (
                    "network=true needs an admin token: the bridge network has no egress proxy, no "
                    "allowlist and no refusal of internal addresses"
                ),
            ),
            Action("list", a.list_, NoParams, read_only=True, idempotent=True),
            Action("get", a.get, ProjectScoped, read_only=True, idempotent=True),
            Action("delete", a.delete, ProjectScoped, destructive=True, idempotent=True),
            Action("secret_set", a.secret_set, SecretSet, idempotent=True),
            Action("secret_list", a.secret_list, ProjectScoped, read_only=True, idempotent=True),
            Action("secret_delete", a.secret_delete, SecretNamed, destructive=True),
        ],
    )
