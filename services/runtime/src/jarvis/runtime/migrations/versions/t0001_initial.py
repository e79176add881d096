"""Initial schema: projects, workspaces, sessions, builds, events.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from jarvis.common.sql.types import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_PROJECT_FK = "runtime_projects.id"


def upgrade() -> None:
    op.create_table(
        "runtime_projects",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("source_url", sa.String(2000), nullable=False),
        sa.Column("image", sa.String(500), nullable=False),
        sa.Column("agent_command", sa.JSON(), nullable=False),
        sa.Column("agent_protocol", sa.String(32), nullable=False),
        sa.Column("network", sa.Boolean(), nullable=False),
        sa.Column("git", sa.Boolean(), nullable=False),
        sa.Column("container_id", sa.String(100), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_runtime_projects"),
        sa.UniqueConstraint("name", name="uq_runtime_projects_name"),
    )
    op.create_table(
        "runtime_workspaces",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("branch", sa.String(200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], [_PROJECT_FK], ondelete="CASCADE", name="fk_runtime_workspaces_project_id_runtime_projects"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_runtime_workspaces"),
    )
    op.create_index("ix_runtime_workspaces_project_id", "runtime_workspaces", ["project_id"])
    op.create_table(
        "runtime_sessions",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("workspace_id", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("agent_command", sa.JSON(), nullable=False),
        sa.Column("agent_protocol", sa.String(32), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("ended_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["project_id"], [_PROJECT_FK], ondelete="CASCADE", name="fk_runtime_sessions_project_id_runtime_projects"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_runtime_sessions"),
    )
    op.create_index("ix_runtime_sessions_project_id", "runtime_sessions", ["project_id"])
    op.create_index("ix_runtime_sessions_workspace_id", "runtime_sessions", ["workspace_id"])
    op.create_table(
        "runtime_builds",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("image", sa.String(500), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], [_PROJECT_FK], ondelete="CASCADE", name="fk_runtime_builds_project_id_runtime_projects"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_runtime_builds"),
    )
    op.create_index("ix_runtime_builds_project_id", "runtime_builds", ["project_id"])
    op.create_table(
        "runtime_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("stream_id", sa.String(32), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_runtime_events"),
        sa.UniqueConstraint("stream_id", "seq", name="uq_runtime_events_stream_seq"),
    )
    op.create_index("ix_runtime_events_project", "runtime_events", ["project_id"])


def downgrade() -> None:
    for table in ("runtime_events", "runtime_builds", "runtime_sessions", "runtime_workspaces", "runtime_projects"):
        op.drop_table(table)
