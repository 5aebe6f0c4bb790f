"""The claims table: the last claim of each supervisor that sent a request id.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create `claims` (empty)."""
    op.create_table(
        "claims",
        sa.Column("supervisor", sa.String(256), nullable=False),
        sa.Column("request", sa.String(64), nullable=False),
        sa.Column("task_id", sa.BigInteger(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("supervisor", name="claims_pkey"),
    )


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
