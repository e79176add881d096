"""Projects keep the hosts their agents may reach through the egress proxy.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing projects allow nothing more than their preset's hosts.
    with op.batch_alter_table("runtime_projects") as batch:
        batch.add_column(sa.Column("egress_allow", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("runtime_projects") as batch:
        batch.drop_column("egress_allow")
