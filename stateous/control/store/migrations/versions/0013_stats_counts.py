"""The counts of GET /stats kept in the same transactions.

- `stats_counts` (kind, structure, workflow, state, status, n): every token by its structure,
  workflow, state and status (`kind` 'token'), and every open task (queued, claimed, waiting) by
  its own structure and state, its token's workflow and its status (`kind` 'task'); a null
  structure or workflow is ''.
- Triggers on `tokens` and `tasks` keep them in the transaction of every write, whichever path
  writes (the engine, claims, retention, import, version moves, repair, bulk jobs): no code of
  the engine has to remember them.
  - SQLite (one writer at a time): row triggers add to the count rows themselves (an upsert).
  - Postgres (writers side by side): row triggers append +1/-1 rows to `stats_deltas`, since
    updating shared count rows would make concurrent transactions wait for each other, and
    deadlock when two touch the same rows in another order. /stats reads the counts plus the
    deltas in one statement; the holder folds the deltas into the counts in the background.
  A trigger fires only on a change that moves a count (`UPDATE OF` the counted columns and a
  `WHEN` that compares them): a heartbeat, a context change or a lease renewal costs nothing.
- The counts are filled from the rows there are, after the triggers are made (on Postgres
  `CREATE TRIGGER` locks out writers until this transaction commits, so none is missed).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_KEY = ("kind", "structure", "workflow", "state", "status")
_OPEN = "('queued', 'claimed', 'waiting')"
# Postgres keeps a trigger's WHEN as it deparses it, and an IN list's casts move through a dump
# and a restore; written in the deparsed form, the condition stays the same (as tables.py's
# `_TASK_IS_OPEN_PG`).
_PG_OPEN = "ANY (ARRAY['queued'::text, 'claimed'::text, 'waiting'::text])"
_TOKEN_MOVED = (
    "OLD.state IS DISTINCT FROM NEW.state OR OLD.status IS DISTINCT FROM NEW.status"
    " OR OLD.workflow IS DISTINCT FROM NEW.workflow"
    " OR OLD.structure IS DISTINCT FROM NEW.structure"
)
_TASK_MOVED = (
    "(OLD.status IN {open} OR NEW.status IN {open}) AND (OLD.status IS DISTINCT FROM"
    " NEW.status OR OLD.state IS DISTINCT FROM NEW.state"
    " OR OLD.structure IS DISTINCT FROM NEW.structure OR OLD.token IS DISTINCT FROM NEW.token)"
)
# The fill: the same groups as the triggers keep, from the rows there are.
_FILL_TOKENS = """
INSERT INTO stats_counts (kind, structure, workflow, state, status, n)
SELECT 'token', coalesce(structure, ''), coalesce(workflow, ''), state, status, count(*)
FROM tokens GROUP BY coalesce(structure, ''), coalesce(workflow, ''), state, status
"""
_FILL_TASKS = f"""
INSERT INTO stats_counts (kind, structure, workflow, state, status, n)
SELECT 'task', coalesce(tasks.structure, ''), coalesce(tokens.workflow, ''), tasks.state,
       tasks.status, count(*)
FROM tasks JOIN tokens ON tokens.token = tasks.token
WHERE tasks.status IN {_OPEN}
GROUP BY coalesce(tasks.structure, ''), coalesce(tokens.workflow, ''), tasks.state, tasks.status
"""


def upgrade() -> None:
    """Make the two tables and the triggers, then fill the counts."""
    op.create_table(
        "stats_counts",
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("structure", sa.String(80), nullable=False),
        sa.Column("workflow", sa.String(64), nullable=False),
        sa.Column("state", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(*_KEY, name="stats_counts_pkey"),
    )
    op.create_table(
        "stats_deltas",
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("structure", sa.String(80), nullable=False),
        sa.Column("workflow", sa.String(64), nullable=False),
        sa.Column("state", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
    )
    statements = _postgres() if op.get_bind().dialect.name == "postgresql" else _sqlite()
    for statement in statements:
        op.execute(statement)
    op.execute(_FILL_TOKENS)
    op.execute(_FILL_TASKS)


def _sqlite_add(kind: str, row: str, workflow: str, sign: str, when: str = "1") -> str:
    """An upsert of one count row from the trigger's OLD or NEW row (`row`); the SELECT's WHERE
    is both its condition and what SQLite's parser needs before ON CONFLICT."""
    structure = f"coalesce({row}.structure, '')"
    return (
        "INSERT INTO stats_counts (kind, structure, workflow, state, status, n) "
        f"SELECT '{kind}', {structure}, {workflow}, {row}.state, {row}.status, {sign}1 "
        f"WHERE {when} "
        "ON CONFLICT (kind, structure, workflow, state, status) DO UPDATE SET n = n + excluded.n;"
    )


def _task_workflow(row: str) -> str:
    """The workflow of the task's token ('' for a top token)."""
    return f"coalesce((SELECT workflow FROM tokens WHERE token = {row}.token), '')"


def _sqlite() -> list[str]:
    """SQLite's six row triggers, adding to `stats_counts` itself."""
    token = "coalesce({}.workflow, '')"
    old_token = _sqlite_add("token", "OLD", token.format("OLD"), "-")
    new_token = _sqlite_add("token", "NEW", token.format("NEW"), "+")
    old_task = _sqlite_add("task", "OLD", _task_workflow("OLD"), "-", f"OLD.status IN {_OPEN}")
    new_task = _sqlite_add("task", "NEW", _task_workflow("NEW"), "+", f"NEW.status IN {_OPEN}")
    token_moved = _TOKEN_MOVED.replace("IS DISTINCT FROM", "IS NOT")
    task_moved = _TASK_MOVED.format(open=_OPEN).replace("IS DISTINCT FROM", "IS NOT")
    return [
        f"CREATE TRIGGER stats_tokens_insert AFTER INSERT ON tokens BEGIN {new_token} END",
        "CREATE TRIGGER stats_tokens_update AFTER UPDATE OF state, status, workflow, structure"
        f" ON tokens WHEN {token_moved} BEGIN {old_token} {new_token} END",
        f"CREATE TRIGGER stats_tokens_delete AFTER DELETE ON tokens BEGIN {old_token} END",
        f"CREATE TRIGGER stats_tasks_insert AFTER INSERT ON tasks WHEN NEW.status IN {_OPEN}"
        f" BEGIN {new_task} END",
        "CREATE TRIGGER stats_tasks_update AFTER UPDATE OF status, state, structure, token"
        f" ON tasks WHEN {task_moved} BEGIN {old_task} {new_task} END",
        f"CREATE TRIGGER stats_tasks_delete AFTER DELETE ON tasks WHEN OLD.status IN {_OPEN}"
        f" BEGIN {old_task} END",
    ]


# One INSERT a firing (an update's -1 and +1 as two rows of it), and a task's token read once.
_PG_TOKEN_DELTA = """
CREATE FUNCTION stats_token_delta() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO stats_deltas (kind, structure, workflow, state, status, n) VALUES
      ('token', coalesce(OLD.structure, ''), coalesce(OLD.workflow, ''), OLD.state, OLD.status,
       -1),
      ('token', coalesce(NEW.structure, ''), coalesce(NEW.workflow, ''), NEW.state, NEW.status,
       1);
  ELSIF TG_OP = 'INSERT' THEN
    INSERT INTO stats_deltas (kind, structure, workflow, state, status, n) VALUES
      ('token', coalesce(NEW.structure, ''), coalesce(NEW.workflow, ''), NEW.state, NEW.status,
       1);
  ELSE
    INSERT INTO stats_deltas (kind, structure, workflow, state, status, n) VALUES
      ('token', coalesce(OLD.structure, ''), coalesce(OLD.workflow, ''), OLD.state, OLD.status,
       -1);
  END IF;
  RETURN NULL;
END $$
"""
_PG_TASK_DELTA = f"""
CREATE FUNCTION stats_task_delta() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  was_open boolean := TG_OP <> 'INSERT' AND OLD.status IN {_OPEN};
  is_open boolean := TG_OP <> 'DELETE' AND NEW.status IN {_OPEN};
  w text;
BEGIN
  IF TG_OP = 'DELETE' THEN
    SELECT workflow INTO w FROM tokens WHERE token = OLD.token;
  ELSE
    SELECT workflow INTO w FROM tokens WHERE token = NEW.token;
  END IF;
  w := coalesce(w, '');
  IF was_open AND is_open THEN
    INSERT INTO stats_deltas (kind, structure, workflow, state, status, n) VALUES
      ('task', coalesce(OLD.structure, ''), w, OLD.state, OLD.status, -1),
      ('task', coalesce(NEW.structure, ''), w, NEW.state, NEW.status, 1);
  ELSIF was_open THEN
    INSERT INTO stats_deltas (kind, structure, workflow, state, status, n) VALUES
      ('task', coalesce(OLD.structure, ''), w, OLD.state, OLD.status, -1);
  ELSIF is_open THEN
    INSERT INTO stats_deltas (kind, structure, workflow, state, status, n) VALUES
      ('task', coalesce(NEW.structure, ''), w, NEW.state, NEW.status, 1);
  END IF;
  RETURN NULL;
END $$
"""


def _postgres() -> list[str]:
    """Postgres's two functions and six row triggers, appending to `stats_deltas`."""
    tokens = "EXECUTE FUNCTION stats_token_delta()"
    task_moved = _TASK_MOVED.replace(" IN {open}", "::text = " + _PG_OPEN)
    tasks = "EXECUTE FUNCTION stats_task_delta()"
    return [
        _PG_TOKEN_DELTA,
        _PG_TASK_DELTA,
        f"CREATE TRIGGER stats_tokens_insert AFTER INSERT ON tokens FOR EACH ROW {tokens}",
        "CREATE TRIGGER stats_tokens_update AFTER UPDATE OF state, status, workflow, structure"
        f" ON tokens FOR EACH ROW WHEN ({_TOKEN_MOVED}) {tokens}",
        f"CREATE TRIGGER stats_tokens_delete AFTER DELETE ON tokens FOR EACH ROW {tokens}",
        "CREATE TRIGGER stats_tasks_insert AFTER INSERT ON tasks FOR EACH ROW"
        f" WHEN (NEW.status::text = {_PG_OPEN}) {tasks}",
        "CREATE TRIGGER stats_tasks_update AFTER UPDATE OF status, state, structure, token"
        f" ON tasks FOR EACH ROW WHEN ({task_moved}) {tasks}",
        "CREATE TRIGGER stats_tasks_delete AFTER DELETE ON tasks FOR EACH ROW"
        f" WHEN (OLD.status::text = {_PG_OPEN}) {tasks}",
    ]


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
