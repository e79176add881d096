"""Sign-in state of the authorization server: one table of records by kind and key (issue 31).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from jarvis.registry.storage.types import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "oauth_records",
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("key", sa.String(300), nullable=False),
        sa.Column("family", sa.String(64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("consumed_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("kind", "key", name="pk_oauth_records"),
    )
    op.create_index("ix_oauth_records_family", "oauth_records", ["family"])


def downgrade() -> None:
    op.drop_index("ix_oauth_records_family", table_name="oauth_records")
    op.drop_table("oauth_records")
