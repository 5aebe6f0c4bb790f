"""Who did it and bulk jobs: the audit index, bulk jobs and matches.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

JSON = sa.JSON(none_as_null=True)
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Create `audit`, `bulk_jobs` and `bulk_matches` (empty) with their indexes."""
    op.create_table(
        "audit",
        sa.Column("token", sa.String(256), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("actor", sa.String(64), nullable=True),
        sa.Column("via", sa.String(16), nullable=True),
        sa.Column("reason", sa.String(500), nullable=True),
        sa.Column("bulk", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("token", "seq", name="audit_pkey"),
    )
    op.create_index("audit_at", "audit", ["at", "token", "seq"])
    op.create_index("audit_actor", "audit", ["actor", "at"])
    op.create_table(
        "bulk_jobs",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("filter", JSON, nullable=False),
        sa.Column("event", sa.String(64), nullable=True),
        sa.Column("payload", JSON, nullable=True),
        sa.Column("matched", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("by", JSON, nullable=True),
        sa.PrimaryKeyConstraint("id", name="bulk_jobs_pkey"),
    )
    op.create_index("bulk_jobs_status", "bulk_jobs", ["status", "id"])
    op.create_table(
        "bulk_matches",
        sa.Column("job", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("token", sa.String(256), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("code", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("job", "token", name="bulk_matches_pkey"),
    )
    op.create_index("bulk_matches_status", "bulk_matches", ["job", "status", "token"])


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
