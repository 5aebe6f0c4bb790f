"""Ended tasks counted too, so that GET /metrics reads counts, never a scan.

- `stats_counts` rows of `kind` 'closed': every task that is no longer open (done, failed,
  cancelled) by its status alone (structure, workflow and state ''). `/metrics`' "tasks by
  status" summed the statuses of every task there is, a walk of two million index entries at a
  million tokens (a second warm, sixteen cold, on SQLite); now it adds these to the open ones.
- The triggers of `tasks` made by 0013 are made again to keep them: each also counts a task
  that ends, is inserted or deleted ended, or changes from one ended status to another. Only a
  change of status moves a 'closed' count, so a task that ends costs one more row of the same
  firing (Postgres: one more INSERT of the delta function; SQLite: one more upsert).
- The counts are filled from the tasks there are, after the triggers are made (on Postgres
  `DROP` and `CREATE TRIGGER` lock out writers until this transaction commits: none is missed).

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_OPEN = "('queued', 'claimed', 'waiting')"
_PG_OPEN = "ANY (ARRAY['queued'::text, 'claimed'::text, 'waiting'::text])"
_TASK_MOVED = (
    "(OLD.status IN {open} OR NEW.status IN {open}) AND (OLD.status IS DISTINCT FROM"
    " NEW.status OR OLD.state IS DISTINCT FROM NEW.state"
    " OR OLD.structure IS DISTINCT FROM NEW.structure OR OLD.token IS DISTINCT FROM NEW.token)"
)
_FILL_CLOSED = f"""
INSERT INTO stats_counts (kind, structure, workflow, state, status, n)
SELECT 'closed', '', '', '', status, count(*) FROM tasks
WHERE status NOT IN {_OPEN} GROUP BY status
"""


def upgrade() -> None:
    """Make the tasks' triggers again, then count the ended tasks there are."""
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in _postgres() if postgres else _sqlite():
        op.execute(statement)
    op.execute(_FILL_CLOSED)


def _sqlite_add(kind: str, row: str, workflow: str, sign: str, when: str) -> str:
    """An upsert of one count row from the trigger's OLD or NEW row (as 0013's)."""
    return (
        "INSERT INTO stats_counts (kind, structure, workflow, state, status, n) "
        f"SELECT '{kind}', coalesce({row}.structure, ''), {workflow}, {row}.state, {row}.status,"
        f" {sign}1 WHERE {when} "
        "ON CONFLICT (kind, structure, workflow, state, status) DO UPDATE SET n = n + excluded.n;"
    )


def _sqlite_closed(row: str, sign: str, when: str) -> str:
    """An upsert of the 'closed' count of the row's status."""
    return (
        "INSERT INTO stats_counts (kind, structure, workflow, state, status, n) "
        f"SELECT 'closed', '', '', '', {row}.status, {sign}1 WHERE {when} "
        "ON CONFLICT (kind, structure, workflow, state, status) DO UPDATE SET n = n + excluded.n;"
    )


def _sqlite() -> list[str]:
    """SQLite's three triggers of `tasks`, adding to `stats_counts` itself."""
    workflow = "coalesce((SELECT workflow FROM tokens WHERE token = {}.token), '')"
    changed = "OLD.status IS NOT NEW.status"
    old_open = f"OLD.status IN {_OPEN}"
    new_open = f"NEW.status IN {_OPEN}"
    old_task = _sqlite_add("task", "OLD", workflow.format("OLD"), "-", old_open)
    new_task = _sqlite_add("task", "NEW", workflow.format("NEW"), "+", new_open)
    task_moved = _TASK_MOVED.format(open=_OPEN).replace("IS DISTINCT FROM", "IS NOT")
    return [
        "DROP TRIGGER stats_tasks_insert",
        "DROP TRIGGER stats_tasks_update",
        "DROP TRIGGER stats_tasks_delete",
        f"CREATE TRIGGER stats_tasks_insert AFTER INSERT ON tasks BEGIN {new_task}"
        f" {_sqlite_closed('NEW', '+', f'NOT {new_open}')} END",
        "CREATE TRIGGER stats_tasks_update AFTER UPDATE OF status, state, structure, token"
        # Fired with an open status on either side, the change moved an open count (a change
        # of status is one of _TASK_MOVED's): 0013's two upserts, then the ended ones.
        f" ON tasks WHEN ({task_moved}) OR {changed} BEGIN {old_task} {new_task}"
        f" {_sqlite_closed('OLD', '-', f'NOT {old_open} AND {changed}')}"
        f" {_sqlite_closed('NEW', '+', f'NOT {new_open} AND {changed}')} END",
        f"CREATE TRIGGER stats_tasks_delete AFTER DELETE ON tasks BEGIN {old_task}"
        f" {_sqlite_closed('OLD', '-', f'NOT {old_open}')} END",
    ]


# 0013's function, with the ended tasks counted by status: the open counts move as before (and
# their token's workflow is read only for them); a change of status out of or into an ended one
# moves the 'closed' counts.
_PG_TASK_DELTA = f"""
CREATE OR REPLACE FUNCTION stats_task_delta() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  was_open boolean := TG_OP <> 'INSERT' AND OLD.status IN {_OPEN};
  is_open boolean := TG_OP <> 'DELETE' AND NEW.status IN {_OPEN};
  changed boolean := TG_OP <> 'UPDATE' OR OLD.status IS DISTINCT FROM NEW.status;
  was_closed boolean := TG_OP <> 'INSERT' AND NOT was_open AND changed;
  is_closed boolean := TG_OP <> 'DELETE' AND NOT is_open AND changed;
  w text;
BEGIN
  -- Fired with an open status on either side, the change moved an open count (the trigger's
  -- WHEN: a change of status is one of 0013's).
  IF was_open OR is_open THEN
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
    ELSE
      INSERT INTO stats_deltas (kind, structure, workflow, state, status, n) VALUES
        ('task', coalesce(NEW.structure, ''), w, NEW.state, NEW.status, 1);
    END IF;
  END IF;
  IF was_closed AND is_closed THEN
    INSERT INTO stats_deltas (kind, structure, workflow, state, status, n) VALUES
      ('closed', '', '', '', OLD.status, -1), ('closed', '', '', '', NEW.status, 1);
  ELSIF was_closed THEN
    INSERT INTO stats_deltas (kind, structure, workflow, state, status, n) VALUES
      ('closed', '', '', '', OLD.status, -1);
  ELSIF is_closed THEN
    INSERT INTO stats_deltas (kind, structure, workflow, state, status, n) VALUES
      ('closed', '', '', '', NEW.status, 1);
  END IF;
  RETURN NULL;
END $$
"""


def _postgres() -> list[str]:
    """Postgres's function and three triggers of `tasks`, appending to `stats_deltas`."""
    task_moved = _TASK_MOVED.replace(" IN {open}", "::text = " + _PG_OPEN)
    tasks = "EXECUTE FUNCTION stats_task_delta()"
    return [
        "DROP TRIGGER stats_tasks_insert ON tasks",
        "DROP TRIGGER stats_tasks_update ON tasks",
        "DROP TRIGGER stats_tasks_delete ON tasks",
        _PG_TASK_DELTA,
        f"CREATE TRIGGER stats_tasks_insert AFTER INSERT ON tasks FOR EACH ROW {tasks}",
        "CREATE TRIGGER stats_tasks_update AFTER UPDATE OF status, state, structure, token"
        f" ON tasks FOR EACH ROW WHEN (({task_moved})"
        f" OR OLD.status IS DISTINCT FROM NEW.status) {tasks}",
        f"CREATE TRIGGER stats_tasks_delete AFTER DELETE ON tasks FOR EACH ROW {tasks}",
    ]


def downgrade() -> None:
    """Released revisions are never downgraded."""
    raise NotImplementedError("Stateous does not downgrade its schema")
