"""Schedules say why Jarvis disabled them (their owner, a signed-in person, was disabled; decision 0057).

Revision ID: s0003
Revises: s0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "s0003"
down_revision = "s0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("scheduler_schedules") as batch:
        batch.add_column(sa.Column("paused_reason", sa.String(500), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("scheduler_schedules") as batch:
        batch.drop_column("paused_reason")
