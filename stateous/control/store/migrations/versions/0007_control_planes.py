"""The control planes table and, on Postgres, the wake-up notifications.

`control_planes`: every live control plane's name, role and last sign of life.

`NOTIFY stateous_queued, '<state>'`: sent by the database itself, inside the transaction, when a
task row becomes `queued` (a new task, a retry) and when a token becomes active again (a resume
makes its queued task claimable). A trigger cannot miss a path that queues a task, and a
notification of a savepoint or transaction that rolls back is never delivered.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


#: The function and triggers that send `stateous_queued` (Postgres only; SQLite has one process).
NOTIFY_SQL = (
    """
    CREATE OR REPLACE FUNCTION stateous_queued() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('stateous_queued', NEW.state);
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER tasks_queued AFTER INSERT OR UPDATE OF status ON tasks
    FOR EACH ROW WHEN (NEW.status = 'queued') EXECUTE FUNCTION stateous_queued()
    """,
    """
    CREATE TRIGGER tokens_active AFTER UPDATE OF status ON tokens
    FOR EACH ROW WHEN (NEW.status = 'active' AND OLD.status <> 'active')
    EXECUTE FUNCTION stateous_queued()
    """,
)


def upgrade() -> None:
    """Create `control_planes` (empty) and its index on the last sign of life."""
    op.create_table(
        "control_planes",
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("seen_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="control_planes_pkey"),
    )
    op.create_index("control_planes_seen", "control_planes", ["seen_at"])
    if op.get_bind().dialect.name == "postgresql":
        for statement in NOTIFY_SQL:
            op.execute(statement)


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
