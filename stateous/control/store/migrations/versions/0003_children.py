"""Child tokens: tokens.parent and tokens.workflow, and case-folded ids made unique.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the child columns (SQLite rebuilds the table) and make `tokens_folded` unique."""
    # The expression index is dropped first: SQLite's batch copy cannot reflect it.
    op.drop_index("tokens_folded", table_name="tokens")
    with op.batch_alter_table("tokens", recreate="always") as batch:
        batch.add_column(sa.Column("parent", sa.String(256), nullable=True))
        batch.add_column(sa.Column("workflow", sa.String(64), nullable=True))
    op.create_index("tokens_parent", "tokens", ["parent"])
    op.create_index("tokens_folded", "tokens", [sa.text("lower(token)")], unique=True)


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
