"""Projects and sessions name their agent preset; projects keep encrypted secrets.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from jarvis.common.sql.types import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing rows ran their own command: the custom agent ("").
    for table in ("runtime_projects", "runtime_sessions"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("agent", sa.String(32), nullable=False, server_default=""))
    op.create_table(
        "runtime_secrets",
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("ciphertext", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["runtime_projects.id"],
            ondelete="CASCADE",
            name="fk_runtime_secrets_project_id_runtime_projects",
        ),
        sa.PrimaryKeyConstraint("project_id", "name", name="pk_runtime_secrets"),
    )


def downgrade() -> None:
    op.drop_table("runtime_secrets")
    for table in ("runtime_sessions", "runtime_projects"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("agent")
