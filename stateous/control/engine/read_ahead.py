"""Reading a shared transaction's reports ahead, on Postgres.

Each report takes its family lock and then reads its task, its token and the token's last seq:
two statements, each a round trip on Postgres, which were a third of a token's statements. When
a shared transaction holds several reports, the lanes let this module take every family lock of
the reports in one statement (in the order of their keys, as `lock_families` does) and read
every task with its token in one more; each report then finds its rows here
(`taken_ahead`) instead of reading them.

A row read ahead must be what the report would read itself. It is, when nothing of the
transaction changed the family before the report runs: so reports are read ahead only in a
group of reports and claims alone (a claim changes no token, and takes only queued tasks, never
a reported one), and only a report whose family no other report of the group touches, in a group whose
tokens are top tokens or their children (a deeper token's top is not known before its own
report reads it). The locks
are held to the commit, so no other transaction changes those families meanwhile. The rows are
forgotten when the group ends; a group run again after a failure (with a savepoint each) reads
nothing ahead.

SQLite has one writer and statements without round trips: nothing is read ahead there.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection

from stateous.control.store.group import Op
from stateous.control.store.locks import lock_tasks_families
from stateous.control.store.records import TaskRecord, TokenRecord
from stateous.control.store.tasks import tasks_tokens_seqs

Found = tuple[TaskRecord, TokenRecord, int]

#: The calls a group may hold for its reports to be read ahead.
_ALONGSIDE = frozenset({"report", "claim"})


class _Ahead(threading.local):
    """The rows read ahead for the group this lane runs (each lane is a thread)."""

    found: dict[int, Found] | None = None


_ahead = _Ahead()


@contextmanager
def reading_ahead(conn: Connection, group: Sequence[Op]) -> Iterator[None]:
    """Lock and read the reports of `group` ahead, for as long as it runs."""
    reports = [op.task for op in group if op.call == "report" and op.task is not None]
    if len(reports) < 2 or any(op.call not in _ALONGSIDE for op in group):
        yield
        return
    _ahead.found = _read(conn, reports)
    try:
        yield
    finally:
        _ahead.found = None


def _read(conn: Connection, reports: Sequence[int]) -> dict[int, Found]:
    keys = lock_tasks_families(conn, sorted(set(reports)))
    if any(deeper for _, deeper in keys.values()):
        # A token two levels down has a top whose family is not among the keys: its report
        # could change any token of that family before another report runs.
        return {}
    per_family = Counter(key for key, _ in keys.values())
    per_task = Counter(reports)
    alone = [
        task for task, (key, _) in keys.items() if per_family[key] == 1 and per_task[task] == 1
    ]
    return tasks_tokens_seqs(conn, alone) if alone else {}


def taken_ahead(task_id: int) -> Found | None:
    """The task, its token and the token's last seq as read ahead (once), or None."""
    found = _ahead.found
    return None if found is None else found.pop(task_id, None)
