"""Projects keep the token that created them, and whether its per-token caps apply.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing projects have no known owner: they count against no token's caps.
    with op.batch_alter_table("runtime_projects") as batch:
        batch.add_column(sa.Column("created_by", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("capped", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.create_index("ix_runtime_projects_created_by", ["created_by"])


def downgrade() -> None:
    with op.batch_alter_table("runtime_projects") as batch:
        batch.drop_index("ix_runtime_projects_created_by")
        batch.drop_column("capped")
        batch.drop_column("created_by")
