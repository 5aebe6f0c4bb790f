"""Finding tokens by their context: `token_keys` and `search_keys`.

- `token_keys` (key, value, token): the searchable context keys of top tokens, the value as its
  JSON text, primary key (key, value, token) so a search walks it; the index
  `token_keys_token` so a token's rows are replaced (and pruned) without a scan.
- `search_keys` (structure, key, filled_at): a search key whose tokens are all indexed. A
  database of before holds no graph with search keys, so both start empty; `serve` fills a key
  of its graph in the background when the key has no row yet.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the two tables and the index."""
    op.create_table(
        "token_keys",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.String(256), nullable=False),
        sa.Column("token", sa.String(128), nullable=False),
        sa.PrimaryKeyConstraint("key", "value", "token", name="token_keys_pkey"),
    )
    op.create_index("token_keys_token", "token_keys", ["token"])
    op.create_table(
        "search_keys",
        sa.Column("structure", sa.String(80), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("filled_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("structure", "key", name="search_keys_pkey"),
    )


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
