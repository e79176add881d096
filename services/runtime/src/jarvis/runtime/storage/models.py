"""ORM models of the runtime's tables (all prefixed `runtime_`). Migrations mirror them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jarvis.common.sql.base import TYPE_ANNOTATION_MAP, new_metadata
from jarvis.common.sql.types import utcnow


class Base(DeclarativeBase):
    metadata = new_metadata()
    type_annotation_map = TYPE_ANNOTATION_MAP


class ProjectRow(Base):
    """A project: where its code comes from and how its container and agents run."""

    __tablename__ = "runtime_projects"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    source_url: Mapped[str] = mapped_column(String(2000), default="")
    image: Mapped[str] = mapped_column(String(500))
    agent_command: Mapped[list[str]] = mapped_column()
    agent_protocol: Mapped[str] = mapped_column(String(32))
    agent: Mapped[str] = mapped_column(String(32), default="")  # a preset's name; "": the command above
    network: Mapped[bool] = mapped_column(default=False)
    # Hosts its agents may reach through the egress proxy besides the preset's (domain/egress_policy.py).
    egress_allow: Mapped[list[str]] = mapped_column(default=list)
    git: Mapped[bool] = mapped_column(default=False)
    container_id: Mapped[str] = mapped_column(String(100), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # The token that created it ("": the local user, or made before owners were kept), and whether its caps apply
    # (not for an admin): the projects a token owns, and their containers running at once, are capped per token.
    created_by: Mapped[str] = mapped_column(String(64), default="", index=True)
    capped: Mapped[bool] = mapped_column(default=False)


class WorkspaceRow(Base):
    """A working directory of one project: a git worktree on its own branch, or a plain directory."""

    __tablename__ = "runtime_workspaces"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("runtime_projects.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    branch: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class SessionRow(Base):
    """An agent process in the project's container, in one workspace."""

    __tablename__ = "runtime_sessions"
    # A redelivered spawn (same key, same project) finds the first session; the database settles races.
    # NULLs never collide, so sessions spawned without a key are unconstrained.
    __table_args__ = (
        UniqueConstraint("project_id", "idempotency_key", name="uq_runtime_sessions_project_idempotency_key"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("runtime_projects.id", ondelete="CASCADE"), index=True)
    # Kept after the workspace is deleted: a finished session's history stays readable.
    workspace_id: Mapped[str] = mapped_column(String(32), index=True)
    state: Mapped[str] = mapped_column(String(16))
    agent_command: Mapped[list[str]] = mapped_column()
    agent_protocol: Mapped[str] = mapped_column(String(32))
    agent: Mapped[str] = mapped_column(String(32), default="")
    pid: Mapped[int] = mapped_column(Integer, default=0)
    exit_code: Mapped[int] = mapped_column(Integer, default=-1)
    detail: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column()
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)


class SecretRow(Base):
    """A project's secret, sealed (Fernet) with the runtime's key; see domain/secrets.py."""

    __tablename__ = "runtime_secrets"

    project_id: Mapped[str] = mapped_column(ForeignKey("runtime_projects.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    ciphertext: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class BuildRow(Base):
    """An image rebuild from the project's Dockerfile; its output lines are events of the build id."""

    __tablename__ = "runtime_builds"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("runtime_projects.id", ondelete="CASCADE"), index=True)
    image: Mapped[str] = mapped_column(String(500))
    state: Mapped[str] = mapped_column(String(16))
    error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class EventRow(Base):
    """One event of a session or build stream, numbered 1, 2, … within its stream."""

    __tablename__ = "runtime_events"
    __table_args__ = (
        UniqueConstraint("stream_id", "seq", name="uq_runtime_events_stream_seq"),
        Index("ix_runtime_events_project", "project_id"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    project_id: Mapped[str] = mapped_column(String(32))
    stream_id: Mapped[str] = mapped_column(String(32))
    seq: Mapped[int] = mapped_column(BigInteger)
    type: Mapped[str] = mapped_column(String(64))
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
