"""Sessions remember the idempotency key they were spawned with, unique within their project.

Revision ID: 0002
Revises: 0001
Create Date: 2025-06-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_UNIQUE = "uq_runtime_sessions_project_idempotency_key"


def upgrade() -> None:
    # Batch mode: SQLite cannot add a constraint to an existing table, so the table is recreated there.
    with op.batch_alter_table("runtime_sessions") as batch:
        batch.add_column(sa.Column("idempotency_key", sa.String(200), nullable=True))
        batch.create_unique_constraint(_UNIQUE, ["project_id", "idempotency_key"])


def downgrade() -> None:
    with op.batch_alter_table("runtime_sessions") as batch:
        batch.drop_constraint(_UNIQUE, type_="unique")
        batch.drop_column("idempotency_key")
