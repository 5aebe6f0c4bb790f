"""The claim's index in the claim's order: `tasks_queue` as (status, state, id) (issue 13).

A claim reads, per served state, the oldest queued tasks: `status = 'queued' AND state = ?
ORDER BY id LIMIT n`. On SQLite `tasks_queue` (status, state) ends with the rowid, which is the
id, so the claim walked its first n entries. A Postgres B-tree keeps no such order (equal keys
are in the order of their rows on disk, which an UPDATE moves), so every claim read every
queued task of each served state and sorted them: with a backlog of a thousand tasks, 1-4 ms
of Postgres's CPU a claim (and a planner without fresh statistics preferred `tasks_lease`,
which reads every queued task of every state). With the id as the index's third key, a claim
is a walk of n entries on both, whatever the queue holds.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Rebuild `tasks_queue` with the id after the state, under its name."""
    op.drop_index("tasks_queue", table_name="tasks")
    op.create_index("tasks_queue", "tasks", ["status", "state", "id"])


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
