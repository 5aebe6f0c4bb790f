"""Schedules: the table `schedules` and its index on `next_at`.

A database of before has no schedule, so the table starts empty.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the table and its index."""
    op.create_table(
        "schedules",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("cron", sa.String(256), nullable=False),
        sa.Column("tz", sa.String(64), nullable=False),
        sa.Column("context", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("id", sa.String(128), nullable=False),
        sa.Column("catch_up", sa.String(8), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("next_at", sa.DateTime(), nullable=False),
        sa.Column("last_at", sa.DateTime(), nullable=True),
        sa.Column("last_token", sa.String(128), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="schedules_pkey"),
    )
    op.create_index("schedules_next_at", "schedules", ["next_at"])


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
