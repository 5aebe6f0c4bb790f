"""The baseline: control_plane, ledger, memory, tasks, timers, tokens.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels = None
depends_on = None

JSON = sa.JSON(none_as_null=True)
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Create the tables of the first schema and the control_plane row."""
    control_plane = op.create_table(
        "control_plane",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("structure", sa.String(80), nullable=True),
        sa.Column("checksum", sa.String(80), nullable=True),
        sa.Column("serving", sa.String(256), nullable=True),
        sa.Column("since", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="control_plane_pkey"),
    )
    op.bulk_insert(control_plane, [{"id": 1}])
    op.create_table(
        "ledger",
        sa.Column("token", sa.String(256), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("key", sa.String(256), nullable=True),
        sa.Column("data", JSON, nullable=False),
        sa.PrimaryKeyConstraint("token", "seq", name="ledger_pkey"),
    )
    op.create_index("ledger_key", "ledger", ["token", "key"], unique=True)
    op.create_table(
        "memory",
        sa.Column("token", sa.String(256), nullable=False),
        sa.Column("state", sa.String(64), nullable=False),
        sa.Column("key", sa.String(128), nullable=False),
        sa.Column("value", JSON, nullable=False),
        sa.PrimaryKeyConstraint("token", "state", "key", name="memory_pkey"),
    )
    op.create_table(
        "tasks",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("token", sa.String(256), nullable=False),
        sa.Column("state", sa.String(64), nullable=False),
        sa.Column("visit", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("claimed_by", sa.String(256), nullable=True),
        sa.Column("lease_until", sa.DateTime(), nullable=True),
        sa.Column("queued_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="tasks_pkey"),
    )
    op.create_index("tasks_queue", "tasks", ["status", "state"])
    op.create_index("tasks_token", "tasks", ["token", "status"])
    op.create_index("tasks_lease", "tasks", ["status", "lease_until"])
    op.create_table(
        "timers",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("token", sa.String(256), nullable=False),
        sa.Column("state", sa.String(64), nullable=False),
        sa.Column("visit", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("payload", JSON, nullable=True),
        sa.Column("set_at", sa.DateTime(), nullable=False),
        sa.Column("due_at", sa.DateTime(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("id", name="timers_pkey"),
    )
    op.create_index("timers_due", "timers", ["status", "due_at"])
    op.create_index("timers_token", "timers", ["token", "status"])
    op.create_table(
        "tokens",
        sa.Column("token", sa.String(256), nullable=False),
        sa.Column("state", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("visit", sa.Integer(), nullable=False),
        sa.Column("context", JSON, nullable=False),
        sa.Column("entered_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("token", name="tokens_pkey"),
    )
    op.create_index("tokens_folded", "tokens", [sa.text("lower(token)")], unique=False)
    op.create_index("tokens_moved", "tokens", ["entered_at", "token"])
    op.create_index("tokens_status", "tokens", ["status", "entered_at"])


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
