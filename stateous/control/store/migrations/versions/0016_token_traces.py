"""A token's trace: `token_traces`.

- `token_traces` (token, traceparent): the W3C `traceparent` of a token started while `serve`
  traced, or with the header. A database of before has no token with a trace, so the table
  starts empty.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the table."""
    op.create_table(
        "token_traces",
        sa.Column("token", sa.String(256), nullable=False),
        sa.Column("traceparent", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("token", name="token_traces_pkey"),
    )


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
