"""ORM models of the registry's tables. Migrations in jarvis/registry/migrations mirror them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Float, ForeignKey, Integer, String, Table, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jarvis.common.sql.base import TYPE_ANNOTATION_MAP, new_metadata
from jarvis.registry.storage.types import utcnow


class Base(DeclarativeBase):
    metadata = new_metadata()
    type_annotation_map = TYPE_ANNOTATION_MAP


class Timestamped:
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class CatalogEntryRow(Timestamped, Base):
    """An installable server: a launch template plus what is known about its tools."""

    __tablename__ = "catalog_entries"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    title: Mapped[str] = mapped_column(String(300), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    category: Mapped[str] = mapped_column(String(100), default="")
    source: Mapped[str] = mapped_column(String(300))
    homepage: Mapped[str] = mapped_column(String(1000), default="")
    launch: Mapped[dict[str, Any]] = mapped_column()
    required_env: Mapped[list[str]] = mapped_column()
    tools: Mapped[list[dict[str, Any]]] = mapped_column(JSON())


profile_servers = Table(
    "profile_servers",
    Base.metadata,
    Column("profile_id", ForeignKey("profiles.id", ondelete="CASCADE"), primary_key=True),
    Column("server_id", ForeignKey("servers.id", ondelete="CASCADE"), primary_key=True, index=True),
)


class ServerRow(Timestamped, Base):
    """An installed server and how to launch or reach it."""

    __tablename__ = "servers"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    catalog_name: Mapped[str | None] = mapped_column(String(200), index=True)
    transport: Mapped[str] = mapped_column(String(32))
    command: Mapped[str] = mapped_column(String(1000), default="")
    args: Mapped[list[str]] = mapped_column(default=list)
    env: Mapped[dict[str, Any]] = mapped_column(default=dict)
    cwd: Mapped[str] = mapped_column(String(1000), default="")
    url: Mapped[str] = mapped_column(String(2000), default="")
    headers: Mapped[dict[str, Any]] = mapped_column(default=dict)
    image: Mapped[str] = mapped_column(String(500), default="")
    tools: Mapped[list[dict[str, Any]]] = mapped_column(JSON(), default=list)
    status: Mapped[str] = mapped_column(String(32), default="not-hosted")
    last_error: Mapped[str] = mapped_column(Text, default="")

    profiles: Mapped[list[ProfileRow]] = relationship(
        secondary=profile_servers, back_populates="servers", passive_deletes=True
    )


class ProfileRow(Timestamped, Base):
    """A named set of installed servers."""

    __tablename__ = "profiles"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")

    servers: Mapped[list[ServerRow]] = relationship(
        secondary=profile_servers, back_populates="profiles", passive_deletes=True
    )


class TokenRow(Base):
    """An access token. Only the SHA-256 of the secret is stored."""

    __tablename__ = "tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(16))
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[list[str]] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column()
    revoked_at: Mapped[datetime | None] = mapped_column()
    last_used_at: Mapped[datetime | None] = mapped_column()
    # The person the token acts for (their subject at the team's provider); "" for a machine's token.
    owner: Mapped[str] = mapped_column(String(300), default="", server_default="", index=True)


class OAuthRecordRow(Base):
    """Sign-in state of the authorization server (clients, pending authorizations, codes, refresh tokens, users,
    roles), one JSON body per (kind, key); codes and refresh tokens are keyed by the SHA-256 of the secret."""

    __tablename__ = "oauth_records"

    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    family: Mapped[str] = mapped_column(String(64), default="", index=True)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column()
    consumed_at: Mapped[datetime | None] = mapped_column()
    revoked_at: Mapped[datetime | None] = mapped_column()


class UsageRow(Base):
    """Aggregated calls of one tool action; one row per (tool, action) keeps the table small."""

    __tablename__ = "usage_stats"

    tool: Mapped[str] = mapped_column(String(200), primary_key=True)
    action: Mapped[str] = mapped_column(String(100), primary_key=True)
    calls: Mapped[int] = mapped_column(BigInteger, default=0)
    errors: Mapped[int] = mapped_column(BigInteger, default=0)
    total_latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    max_latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    last_called_at: Mapped[datetime | None] = mapped_column()


class AuditRow(Base):
    """One tool call as the audit log keeps it: who, where, what, how it ended. Pruned by retention."""

    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True)
    at: Mapped[datetime] = mapped_column(index=True)
    token_id: Mapped[str] = mapped_column(String(64), default="")
    token_name: Mapped[str] = mapped_column(String(200), default="")
    surface: Mapped[str] = mapped_column(String(100))
    tool: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(100), default="")
    target: Mapped[str] = mapped_column(String(200), default="")
    outcome: Mapped[str] = mapped_column(String(32))
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    arguments_json: Mapped[str] = mapped_column(Text, default="")


class ToolPinRow(Base):
    """The definition a hosted server's tool had when first seen, and the latest one if it changed.

    Keyed by the server's id, so a renamed server keeps its pins and an uninstalled one drops them.
    """

    __tablename__ = "tool_pins"
    __table_args__ = (UniqueConstraint("server_id", "tool", name="uq_tool_pins_server_id_tool"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    server_id: Mapped[int] = mapped_column(ForeignKey("servers.id", ondelete="CASCADE"))
    tool: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(16))
    pinned_sha256: Mapped[str] = mapped_column(String(64))
    pinned_json: Mapped[str] = mapped_column(Text)
    seen_sha256: Mapped[str] = mapped_column(String(64))
    seen_json: Mapped[str] = mapped_column(Text)
    pinned_at: Mapped[datetime] = mapped_column(default=utcnow)
    changed_at: Mapped[datetime | None] = mapped_column()


class DownstreamGrantRow(Timestamped, Base):
    """A person's OAuth grant at a downstream server (issue 32): tokens and client registration, sealed with the
    vault key (domain/vault.py); the person and server are sealed in too, so a row moved to another key does not
    open there."""

    __tablename__ = "downstream_grants"

    person: Mapped[str] = mapped_column(String(300), primary_key=True)
    server: Mapped[str] = mapped_column(String(200), primary_key=True)
    ciphertext: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[int] = mapped_column(BigInteger, default=0)
    refreshable: Mapped[bool] = mapped_column(default=False)
    has_tokens: Mapped[bool] = mapped_column(default=False)
