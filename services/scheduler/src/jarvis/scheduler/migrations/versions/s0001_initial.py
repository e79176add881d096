"""Initial schema: schedules and runs.

Revision ID: s0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from jarvis.common.sql.types import UTCDateTime

revision = "s0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scheduler_schedules",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("cron", sa.String(200), nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("targets", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("concurrency", sa.String(16), nullable=False),
        sa.Column("missed", sa.String(16), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("next_fire_at", UTCDateTime(), nullable=True),
        sa.Column("last_fired_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_scheduler_schedules"),
    )
    op.create_index("ix_scheduler_schedules_due", "scheduler_schedules", ["enabled", "next_fire_at"])
    op.create_table(
        "scheduler_runs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("schedule_id", sa.String(32), nullable=False),
        sa.Column("target", sa.String(64), nullable=False),
        sa.Column("tick", UTCDateTime(), nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("concurrency", sa.String(16), nullable=False),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("missed_ticks", sa.Integer(), nullable=False),
        sa.Column("first_missed_tick", UTCDateTime(), nullable=True),
        sa.Column("queued_at", UTCDateTime(), nullable=False),
        sa.Column("dispatched_at", UTCDateTime(), nullable=True),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("session_started_at", UTCDateTime(), nullable=True),
        sa.Column("heartbeat_at", UTCDateTime(), nullable=True),
        sa.Column("retry_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_scheduler_runs"),
        sa.UniqueConstraint("idempotency_key", name="uq_scheduler_runs_idempotency_key"),
    )
    op.create_index("ix_scheduler_runs_schedule_target_state", "scheduler_runs", ["schedule_id", "target", "state"])
    op.create_index("ix_scheduler_runs_state_queued_at", "scheduler_runs", ["state", "queued_at"])
    op.create_index("ix_scheduler_runs_schedule_queued_at", "scheduler_runs", ["schedule_id", "queued_at"])


def downgrade() -> None:
    op.drop_table("scheduler_runs")
    op.drop_table("scheduler_schedules")
