"""Personal access tokens: the person a `jv_` token acts for (issue 49); empty for a machine's token.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("owner", sa.String(300), nullable=False, server_default=""))
        batch.create_index("ix_tokens_owner", ["owner"])


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_index("ix_tokens_owner")
        batch.drop_column("owner")
