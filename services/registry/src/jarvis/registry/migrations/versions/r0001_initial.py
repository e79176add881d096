"""Initial schema: catalog, servers, profiles, tokens, usage.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from jarvis.registry.storage.types import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "catalog_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("category", sa.String(100), nullable=False),
        sa.Column("source", sa.String(300), nullable=False),
        sa.Column("homepage", sa.String(1000), nullable=False),
        sa.Column("launch", sa.JSON(), nullable=False),
        sa.Column("required_env", sa.JSON(), nullable=False),
        sa.Column("tools", sa.JSON(), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_catalog_entries"),
        sa.UniqueConstraint("name", name="uq_catalog_entries_name"),
    )
    op.create_table(
        "servers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("catalog_name", sa.String(200), nullable=True),
        sa.Column("transport", sa.String(32), nullable=False),
        sa.Column("command", sa.String(1000), nullable=False),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("env", sa.JSON(), nullable=False),
        sa.Column("cwd", sa.String(1000), nullable=False),
        sa.Column("url", sa.String(2000), nullable=False),
        sa.Column("headers", sa.JSON(), nullable=False),
        sa.Column("image", sa.String(500), nullable=False),
        sa.Column("tools", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_servers"),
        sa.UniqueConstraint("name", name="uq_servers_name"),
    )
    op.create_index("ix_servers_catalog_name", "servers", ["catalog_name"])
    op.create_table(
        "profiles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_profiles"),
        sa.UniqueConstraint("name", name="uq_profiles_name"),
    )
    op.create_table(
        "profile_servers",
        sa.Column("profile_id", sa.Integer(), nullable=False),
        sa.Column("server_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["profile_id"], ["profiles.id"], name="fk_profile_servers_profile_id_profiles", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["server_id"], ["servers.id"], name="fk_profile_servers_server_id_servers", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("profile_id", "server_id", name="pk_profile_servers"),
    )
    op.create_index("ix_profile_servers_server_id", "profile_servers", ["server_id"])
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tokens"),
        sa.UniqueConstraint("secret_hash", name="uq_tokens_secret_hash"),
    )
    op.create_table(
        "usage_stats",
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("action", sa.String(100), nullable=False),
        sa.Column("calls", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.Column("total_latency_ms", sa.Float(), nullable=False),
        sa.Column("max_latency_ms", sa.Float(), nullable=False),
        sa.Column("last_called_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("tool", "action", name="pk_usage_stats"),
    )


def downgrade() -> None:
    for table in ("usage_stats", "tokens", "profile_servers", "profiles", "servers", "catalog_entries"):
        op.drop_table(table)
