"""Tool pins: the first-seen definition of each hosted server's tools, for quarantining changes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from jarvis.registry.storage.types import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tool_pins",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("server_id", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("pinned_sha256", sa.String(64), nullable=False),
        sa.Column("pinned_json", sa.Text(), nullable=False),
        sa.Column("seen_sha256", sa.String(64), nullable=False),
        sa.Column("seen_json", sa.Text(), nullable=False),
        sa.Column("pinned_at", UTCDateTime(), nullable=False),
        sa.Column("changed_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["server_id"], ["servers.id"], name="fk_tool_pins_server_id_servers", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_tool_pins"),
        sa.UniqueConstraint("server_id", "tool", name="uq_tool_pins_server_id_tool"),
    )


def downgrade() -> None:
    op.drop_table("tool_pins")
