"""The token vault: each person's OAuth grant at each downstream server, encrypted (issue 32).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from jarvis.registry.storage.types import UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "downstream_grants",
        sa.Column("person", sa.String(300), nullable=False),
        sa.Column("server", sa.String(200), nullable=False),
        sa.Column("ciphertext", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("refreshable", sa.Boolean(), nullable=False),
        sa.Column("has_tokens", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("person", "server", name="pk_downstream_grants"),
    )


def downgrade() -> None:
    op.drop_table("downstream_grants")
