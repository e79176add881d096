"""Schedules (and the runs they queue) carry secret overrides: variable -> another project secret's name.

Revision ID: s0002
Revises: s0001
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "s0002"
down_revision = "s0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("scheduler_schedules", "scheduler_runs"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("secret_overrides", sa.JSON(), nullable=False, server_default="{}"))


def downgrade() -> None:
    for table in ("scheduler_runs", "scheduler_schedules"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("secret_overrides")
