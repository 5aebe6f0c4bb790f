"""Versions side by side: `workflow_versions`, and the structure of each token,
each open task and each supervisor's beat.

- `workflow_versions` (checksum, structure, graph, first_served_at) and its index on
  `structure`. The graph on record today is not known here (the database holds only its
  checksum): `serve` writes its row when it starts with that graph file.
- `tokens.structure`, filled from the `control_plane` row for every token; the partial index
  `tokens_structure` of live top tokens by structure (the `live` counts of the versions).
- `tasks.structure`, filled for open tasks; `tasks_queue` becomes (status, structure, state,
  id) over open tasks, so a claim of one version never walks another's queue.
- `supervisors.checksum`: the checksum a supervisor's beat names.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_OPEN = "status IN ('queued', 'claimed', 'waiting')"
_OPEN_PG = "(status)::text = ANY (ARRAY['queued'::text, 'claimed'::text, 'waiting'::text])"
_LIVE_TOP = "status IN ('active', 'paused') AND parent IS NULL"
_LIVE_TOP_PG = (
    "(((status)::text = ANY (ARRAY['active'::text, 'paused'::text])) AND (parent IS NULL))"
)
_ON_RECORD = "(SELECT structure FROM control_plane WHERE id = 1)"


def upgrade() -> None:
    """Add the table, the columns and the indexes; fill the structures from the row on record."""
    op.create_table(
        "workflow_versions",
        sa.Column("checksum", sa.String(80), nullable=False),
        sa.Column("structure", sa.String(80), nullable=False),
        sa.Column("graph", sa.Text(), nullable=False),
        sa.Column("first_served_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("checksum", name="workflow_versions_pkey"),
    )
    op.create_index("workflow_versions_structure", "workflow_versions", ["structure"])
    op.add_column("tokens", sa.Column("structure", sa.String(80), nullable=True))
    op.add_column("tasks", sa.Column("structure", sa.String(80), nullable=True))
    op.add_column("supervisors", sa.Column("checksum", sa.String(80), nullable=True))
    op.execute(f"UPDATE tokens SET structure = {_ON_RECORD}")
    op.execute(f"UPDATE tasks SET structure = {_ON_RECORD} WHERE {_OPEN}")
    op.drop_index("tasks_queue", table_name="tasks")
    op.create_index(
        "tasks_queue",
        "tasks",
        ["status", "structure", "state", "id"],
        sqlite_where=sa.text(_OPEN),
        postgresql_where=sa.text(_OPEN_PG),
    )
    op.create_index(
        "tokens_structure",
        "tokens",
        ["structure"],
        sqlite_where=sa.text(_LIVE_TOP),
        postgresql_where=sa.text(_LIVE_TOP_PG),
    )


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
