"""Indexes for the listings' pages.

- `tokens_state` (state, entered_at DESC, token): `GET /tokens?state=` walks its state's part
  in the listing's order, so a state that few of a million tokens are in answers at once.
- `tokens_id_order` (token): the ids in code point order for the probe of an id prefix; on
  Postgres with `text_pattern_ops` (its primary key orders by the database's collation, which
  the pattern operators cannot use); on SQLite empty (`WHERE 0`), as its primary key serves.
- `tasks.waiting_since`, when a waiting task began to wait (its `task_waiting` row's time),
  filled here for the tasks waiting now from their token's last `task_waiting` row, and the
  index `tasks_waiting` (waiting_since, id) of waiting tasks: `GET /inbox` walks it in its order
  (it read the ledger of each of 20,000 waiting tasks and sorted them: 840 ms).
- `audit_actor` rebuilt as (actor, at, token, seq): `GET /audit?actor=` walks an actor's acts
  in the route's order; with (actor, at) alone, SQLite walked `audit_at` instead to skip the
  sort, through every act (110 ms for an actor of 20 acts among 200,000).

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the indexes and the column, and rebuild `audit_actor` (from the rows a database
    holds)."""
    op.create_index("tokens_state", "tokens", ["state", sa.text("entered_at DESC"), "token"])
    op.create_index(
        "tokens_id_order",
        "tokens",
        ["token"],
        postgresql_ops={"token": "text_pattern_ops"},
        sqlite_where=sa.text("0"),
    )
    op.add_column("tasks", sa.Column("waiting_since", sa.DateTime(), nullable=True))
    op.execute(
        "UPDATE tasks SET waiting_since = COALESCE((SELECT max(ledger.at) FROM ledger "
        "WHERE ledger.token = tasks.token AND ledger.kind = 'task_waiting'), queued_at) "
        "WHERE status = 'waiting'"
    )
    op.create_index(
        "tasks_waiting",
        "tasks",
        ["waiting_since", "id"],
        sqlite_where=sa.text("status = 'waiting'"),
        postgresql_where=sa.text("(status)::text = 'waiting'::text"),
    )
    op.drop_index("audit_actor", table_name="audit")
    op.create_index("audit_actor", "audit", ["actor", "at", "token", "seq"])


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
