"""The outbox's shared commits: many writers at once, each message durable when `add` returns.

(The supervisor hands its outbox writes to threads so that a claim or a report never waits on
the event loop for another message's disk flush; the writes of those threads share commits.)
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from stateous.supervisor.outbox import Outbox, OutboxError


@pytest.fixture
def outbox(tmp_path: Path) -> Iterator[Outbox]:
    """An open outbox in a temporary folder."""
    box = Outbox(tmp_path)
    yield box
    box.close()


def rows(folder: Path) -> list[tuple[Any, ...]]:
    """The messages table as another process sees it after the outbox closed."""
    with closing(sqlite3.connect(folder / ".stateous" / "outbox.db")) as conn:
        return conn.execute(
            "SELECT id, task, attempt, kind, body FROM messages ORDER BY id"
        ).fetchall()


def test_writers_at_once_each_get_their_own_committed_message(tmp_path: Path) -> None:
    box = Outbox(tmp_path)
    found: dict[int, list[int]] = {}
    barrier = threading.Barrier(8)

    def writer(task: int) -> None:
        barrier.wait()
        ids = []
        for n in range(40):
            message = box.add(task, 1, f"T-{task}", "note", {"text": f"{task}-{n}"})
            ids.append(message.id)
            if n % 2:
                box.remove(message.id)
        found[task] = ids

    threads = [threading.Thread(target=writer, args=(task,)) for task in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert box.count() == 8 * 20
    box.close()
    all_ids = [i for ids in found.values() for i in ids]
    assert len(set(all_ids)) == 8 * 40
    for ids in found.values():
        assert ids == sorted(ids)  # one writer's messages keep their order
    kept = rows(tmp_path)
    assert [row[0] for row in kept] == sorted(i for ids in found.values() for i in ids[0::2])
    assert {row[4] for row in kept} == {
        f'{{"text": "{t}-{n}"}}' for t in range(8) for n in range(0, 40, 2)
    }


def test_a_failing_write_fails_alone(outbox: Outbox, tmp_path: Path) -> None:
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def writer(kind: str) -> None:
        barrier.wait()
        try:
            outbox.add(1, 1, "T-1", kind, {"text": "x"})  # type: ignore[arg-type]  # a bad kind on purpose
        except OutboxError as exc:
            errors.append(exc)

    kinds = ["note", "memory", "bad", "report", "note", "memory"]
    threads = [threading.Thread(target=writer, args=(kind,)) for kind in kinds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(errors) == 1
    assert "CHECK constraint failed" in str(errors[0])
    assert sorted(m.kind for m in outbox.pending()) == [
        "memory",
        "memory",
        "note",
        "note",
        "report",
    ]


def test_remove_attempt_answers_how_many(outbox: Outbox) -> None:
    for _ in range(3):
        outbox.add(5, 2, "T-5", "note", {"text": "x"})
    outbox.add(5, 3, "T-5", "note", {"text": "y"})
    assert outbox.remove_attempt(5, 2) == 3
    assert [(m.task, m.attempt) for m in outbox.pending()] == [(5, 3)]
