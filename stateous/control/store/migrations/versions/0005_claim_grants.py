"""Claims of several tasks: claim_grants keeps the grants of a claim with `max`
beyond its first, which the `claims` row holds, so that a repeated request id answers
them all again.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create `claim_grants` (empty: every existing claim is a single claim)."""
    op.create_table(
        "claim_grants",
        sa.Column("supervisor", sa.String(256), nullable=False),
        sa.Column("position", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("task_id", sa.BigInteger(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("supervisor", "position", name="claim_grants_pkey"),
    )


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
