"""The supervisors table: the last beat of each supervisor.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create `supervisors` (empty) and its index on the last beat."""
    op.create_table(
        "supervisors",
        sa.Column("supervisor", sa.String(256), nullable=False),
        sa.Column("host", sa.String(256), nullable=False),
        sa.Column("pid", sa.BigInteger(), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("states", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.Column("running", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("seen_at", sa.DateTime(), nullable=False),
        sa.Column("stopped_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("supervisor", name="supervisors_pkey"),
    )
    op.create_index("supervisors_seen", "supervisors", ["seen_at"])


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
