"""Claims of several tasks: claims.grants keeps every grant of a supervisor's last claim.

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

JSON = sa.JSON(none_as_null=True)


def upgrade() -> None:
    """Add `claims.grants` (nullable: existing rows are single claims, as before)."""
    # A nullable column is a plain ALTER TABLE ADD COLUMN on SQLite too: no table rebuild.
    op.add_column("claims", sa.Column("grants", JSON, nullable=True))


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
