"""`session`: agent sessions in the project's container: spawn, message, get, list, end, events, cleanup."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import ProjectScoped, SessionScoped, runtime
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.runtime import SessionEvents, SessionsCleaned, SessionView
from jarvis.common.params import Arg


@dataclass(frozen=True)
class Spawn:
    project_id: str
    workspace_id: str = ""
    prompt: str = ""
    agent: str = ""


@dataclass(frozen=True)
class Message:
    project_id: str
    message: str
    workspace_id: str = ""
    session_id: str = ""


@dataclass(frozen=True)
class End:
    project_id: str
    session_id: str
    force: bool = False


@dataclass(frozen=True)
class Events:
    session_id: str
    project_id: str = ""  # the session's own project when left out: its id names it
    after: Annotated[int, Arg("event cursor", minimum=0)] = 0
    limit: Annotated[int, Arg(minimum=1)] = 0
    wait: Annotated[float, Arg("s to wait for events", minimum=0, maximum=20)] = 0.0


@dataclass(frozen=True)
class Cleanup:
    project_id: str
    older_than: Annotated[int, Arg("s", minimum=0)] = 0


@dataclass(frozen=True)
class SessionResult:
    session: SessionView


@dataclass(frozen=True)
class SessionList:
    sessions: list[SessionView]
    count: int


@dataclass(frozen=True)
class SessionActions:
    ctx: ToolContext

    async def spawn(self, p: Spawn, principal: Principal) -> SessionResult:
        rt = runtime(self.ctx)
        # A signed-in person's agent acts for them, within this project (decision 0057); a machine's gets nothing.
        minted = await self.ctx.agents.session_credential(principal, p.project_id) if self.ctx.agents else None
        session_id, agent_env = minted if minted is not None else ("", None)
        return SessionResult(
            await rt.spawn_session(
                p.project_id,
                workspace_id=p.workspace_id,
                prompt=p.prompt,
                agent=p.agent,
                session_id=session_id,
                agent_env=agent_env,
            )
        )

    async def message(self, p: Message, _: Principal) -> SessionResult:
        rt = runtime(self.ctx)
        return SessionResult(
            await rt.message_session(p.project_id, p.message, workspace_id=p.workspace_id, session_id=p.session_id)
        )

    async def get(self, p: SessionScoped, _: Principal) -> SessionView:
        return await runtime(self.ctx).get_session(p.project_id, p.session_id)

    async def list_(self, p: ProjectScoped, _: Principal) -> SessionList:
        sessions = await runtime(self.ctx).list_sessions(p.project_id)
        return SessionList(sessions, len(sessions))

    async def end(self, p: End, _: Principal) -> SessionResult:
        return SessionResult(await runtime(self.ctx).end_session(p.project_id, p.session_id, force=p.force))

    async def events(self, p: Events, _: Principal) -> SessionEvents:
        rt = runtime(self.ctx)
        return await rt.session_events(p.project_id, p.session_id, after=p.after, limit=p.limit, wait=float(p.wait))

    async def cleanup(self, p: Cleanup, _: Principal) -> SessionsCleaned:
        return await runtime(self.ctx).cleanup_sessions(p.project_id, older_than=p.older_than)


def build(ctx: ToolContext) -> Tool:
    a = SessionActions(ctx)
    return Tool(
        name="session",
        description="Agent sessions: spawn|message|get|list|end|events|cleanup",
        summary=(
            "Coding agent sessions (Claude Code, Codex, Gemini, OpenCode, Aider) in a project: spawn one with a "
            "prompt, message it, get its state, list, end, read its events, clean up old ones."
        ),
        actions=[
            Action("spawn", a.spawn, Spawn),
            Action("message", a.message, Message),
            Action("get", a.get, SessionScoped, read_only=True, idempotent=True),
            Action("list", a.list_, ProjectScoped, read_only=True, idempotent=True),
            Action("end", a.end, End, destructive=True, idempotent=True),
            Action("events", a.events, Events, read_only=True, idempotent=True),
            Action("cleanup", a.cleanup, Cleanup, destructive=True),
        ],
    )
