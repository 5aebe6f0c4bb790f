"""A schedule keeps its last failed slot and counts them: `schedules.last_error`,
`schedules.last_error_at` and `schedules.failures`.

A slot whose token did not start (its context no longer fits the model of the version served
since the schedule was saved) was skipped with one line in the log of `serve`, and nothing
else: `schedule list`, `schedule show`, the console and `/metrics` showed nothing wrong. Now the
clock's step that skips such a slot also writes the refusal's sentence, the slot's time and one
more failure in the schedule's row, in the same transaction, so the figures survive a restart
or a takeover and `/metrics` reads an exact count (`stateous_schedule_failures_total`), never
a scan of the log.

A schedule of before has no failure on record: `last_error` and `last_error_at` are null and
`failures` is 0 (the columns' server default), so the upgrade writes no row and reads none.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the three columns (SQLite and Postgres add a column without a rebuild)."""
    op.add_column("schedules", sa.Column("last_error", sa.Text(), nullable=True))
    op.add_column("schedules", sa.Column("last_error_at", sa.DateTime(), nullable=True))
    op.add_column(
        "schedules",
        sa.Column("failures", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
    )


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
