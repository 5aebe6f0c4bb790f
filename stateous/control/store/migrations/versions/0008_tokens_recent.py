"""The token listing's indexes in its own order (issue 13, "a watched system").

`GET /tokens` lists the most recently moved tokens first: `entered_at` descending, then the id
ascending. `tokens_moved` (`entered_at`, `token`) and `tokens_status` (`status`, `entered_at`)
matched only the first key, so every listing sorted the tokens sharing an `entered_at` (SQLite:
"USE TEMP B-TREE FOR RIGHT PART OF ORDER BY"). Rebuilt with `entered_at` descending and the id
after it, a listing of 1,000 tokens is a walk of the index's first 1,000 entries on SQLite and
Postgres, whatever the table holds; `tokens_status` also covers the counts by status.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Rebuild the two listing indexes in the listing's order, under their names."""
    op.drop_index("tokens_moved", table_name="tokens")
    op.drop_index("tokens_status", table_name="tokens")
    op.create_index("tokens_moved", "tokens", [sa.text("entered_at DESC"), "token"])
    op.create_index("tokens_status", "tokens", ["status", sa.text("entered_at DESC"), "token"])


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
