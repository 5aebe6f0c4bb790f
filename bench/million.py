"""The database of a million tokens (docs/performance.md): a million ended `orders` tokens and a
hundred thousand live ones, their rows built here, in the shapes the engine writes them (the
same ledger rows, byte for byte).

The shape (`Shape`, every count scales):

- ended tokens `order-0000000`...: completed after two tasks (14 ledger rows), except every
  `cancelled_every`-th, cancelled in `draft` by an operator (`by`, so one `audit` row each);
  spread over the year before the live ones;
- live tokens `live-000000`..., none of them work for the bench's supervisor:
  `waiting - timers` active in `review` whose task is `waiting` for a person (a note asked);
  `timers` active in `draft` whose task is `waiting` with a pending routine timer (`submitted`,
  due in 30 to 60 days); the others active in `draft` with their task queued on another
  version of the workflow (the starter with one more event, a structure of its own) that no
  supervisor serves, the last `paused` of them paused by an operator (an `audit` row each);
- every top token has its `title` in `token_keys` (`item <n mod values>`), the bench
  workflow's search key.

`preload.py`'s writers insert these rows through the store's tables; `scale.py` measures on
a copy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

#: Appended to the starter's flow.py: the bench workflow searches its tokens by `title`.
SEARCH = '\n# bench: find tokens by their title.\nflow.search("title")\n'

#: Appended after SEARCH for the other version that the queued live tokens run on.
WITHDRAWN = """
# bench: another version, with one more event (a structure of its own).
withdrawn = flow.event("withdrawn")
flow.transition(draft, END, on=withdrawn)
"""

#: Who paused or cancelled a token (the rows' `by`, in the order the API writes it).
BY = {"actor": "alice", "reason": "the customer asked", "via": "console"}

# The `data` of the ledger rows, as the JSON text the store writes (json.dumps): the constant
# ones once, the others by `_task` and friends (a million tokens' 14 million rows are built in
# a minute this way, three times faster than through json.dumps).
STARTED_EVENT = json.dumps({"event": "__started__", "payload": None, "state": "__start__"})
ENTERED_DRAFT = json.dumps({"state": "draft", "visit": 1})
ENTERED_REVIEW = json.dumps({"state": "review", "visit": 1})
SUBMITTED = json.dumps({"event": "submitted", "payload": None, "state": "draft"})
VERDICT = {"approved": True, "note": ""}
VERDICT_CHANGED = json.dumps({"keys": ["verdict"]})
REVIEWED = json.dumps({"event": "reviewed", "payload": VERDICT, "state": "review"})
ACTED = json.dumps({"by": BY})
EMPTY = json.dumps({})
ASKED_REVIEW = "an order over the limit: a person approves it"
ASKED_LATER = "the stock arrives later: submitted then"


def _task(task: int) -> str:
    return f'{{"task": {task}}}'


def _claimed(task: int) -> str:
    return f'{{"task": {task}, "supervisor": "sup-1", "attempt": 1}}'


def _queued(task: int, state: str) -> str:
    return f'{{"task": {task}, "state": "{state}"}}'


def _note(task: int, text: str) -> str:
    return f'{{"task": {task}, "text": "{text}"}}'


@dataclass(frozen=True)
class Shape:
    """How many tokens of each kind (by default the documented million: 1,000,000 ended, 100,000
    live, 20,000 of them waiting, 10,000 with pending timers)."""

    ended: int = 1_000_000
    live: int = 100_000
    waiting: int = 20_000
    timers: int = 10_000
    paused: int = 1_000
    cancelled_every: int = 200
    values: int = 10_000

    def __post_init__(self) -> None:
        if not (0 <= self.timers <= self.waiting and self.waiting + self.paused <= self.live):
            raise ValueError(
                f"a shape needs timers <= waiting and waiting + paused <= live: {self}"
            )

    @classmethod
    def scaled(cls, ended: int, live: int) -> Shape:
        """The default shape's proportions for `ended` and `live` tokens."""
        return cls(
            ended=ended,
            live=live,
            waiting=live // 5,
            timers=live // 10,
            paused=live // 100,
            values=max(1, min(10_000, (ended + live) // 100)),
        )

    def live_kind(self, i: int) -> str:
        """`review`, `timer`, `queued` or `paused`: what the live token `i` is."""
        if i < self.waiting - self.timers:
            return "review"
        if i < self.waiting:
            return "timer"
        return "queued" if i < self.live - self.paused else "paused"

    @property
    def audited(self) -> int:
        """The audit rows: the cancels and the pauses."""
        return len(range(0, self.ended, self.cancelled_every)) + self.paused


def ended_id(n: int) -> str:
    """The id of the n-th ended token."""
    return f"order-{n:07d}"


def live_id(i: int) -> str:
    """The id of the i-th live token."""
    return f"live-{i:06d}"


def title(n: int, shape: Shape) -> str:
    """The title (the search key's value) of token n."""
    return f"item {n % shape.values}"


#: A row of a table: its values in the table's column order.
Row = tuple[Any, ...]


@dataclass
class Batch:
    """The rows of some tokens, per table, in each table's column order (see `COLUMNS`)."""

    tokens: list[Row] = field(default_factory=list)
    tasks: list[Row] = field(default_factory=list)
    timers: list[Row] = field(default_factory=list)
    ledger: list[Row] = field(default_factory=list)
    audit: list[Row] = field(default_factory=list)
    token_keys: list[Row] = field(default_factory=list)

    def tables(self) -> list[tuple[str, list[Row]]]:
        """(table, rows), in an order that inserts a token before what refers to it."""
        return [
            ("tokens", self.tokens),
            ("tasks", self.tasks),
            ("timers", self.timers),
            ("ledger", self.ledger),
            ("audit", self.audit),
            ("token_keys", self.token_keys),
        ]


#: The columns each row of `Batch` fills, named as in stateous/control/store/tables.py.
COLUMNS: dict[str, tuple[str, ...]] = {
    "tokens": ("token", "state", "status", "visit", "context", "entered_at", "parent", "workflow",
               "structure"),
    # `waiting_since` last: a schema without it (before migration 0014) takes the others.
    "tasks": ("id", "token", "state", "visit", "status", "attempt", "claimed_by", "lease_until",
              "queued_at", "structure", "waiting_since"),
    "timers": ("id", "token", "state", "visit", "event", "payload", "set_at", "due_at", "status",
               "kind"),
    "ledger": ("token", "seq", "at", "kind", "key", "data"),
    "audit": ("token", "seq", "at", "kind", "actor", "via", "reason", "bulk"),
    "token_keys": ("key", "value", "token"),
}  # fmt: skip


def iso_z(at: datetime) -> str:
    """A time as the ledger's `timer_set` writes `due_at` (whole seconds here)."""
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Builder:
    """Builds the rows of a `Shape` in batches.

    `stamp` turns a time into the value its column is written with (SQLite: SQLAlchemy's text;
    Postgres: the datetime itself); JSON columns are written as their text.
    """

    shape: Shape
    current: str
    other: str
    now: datetime
    stamp: Callable[[datetime], Any]

    def batches(self, size: int) -> Iterator[Batch]:
        """The ended tokens, then the live ones, `size` tokens a batch."""
        for first in range(0, self.shape.ended, size):
            batch = Batch()
            for n in range(first, min(self.shape.ended, first + size)):
                self.ended(batch, n)
            yield batch
        for first in range(0, self.shape.live, size):
            batch = Batch()
            for i in range(first, min(self.shape.live, first + size)):
                self.live(batch, i)
            yield batch

    # ------------------------------------------------------------------ ended tokens

    def ended_at(self, n: int) -> datetime:
        """When the ended token n started: spread over the year before the live tokens."""
        year = timedelta(days=365)
        return self.now - timedelta(days=30) - year + year * n / max(1, self.shape.ended)

    def ended(self, batch: Batch, n: int) -> None:
        """The rows of the ended token n."""
        token, at = ended_id(n), self.ended_at(n)
        draft, review = 2 * n + 1, 2 * n + 2
        value = json.dumps(title(n, self.shape))
        batch.token_keys.append(("title", value, token))
        if n % self.shape.cancelled_every == 0:
            self._cancelled(batch, token, at, draft, value)
            return
        ms = [self.stamp(at + timedelta(milliseconds=k)) for k in (0, 5, 6, 8)]
        context = f'{{"title": {value}, "verdict": {{"approved": true, "note": ""}}}}'
        batch.tokens.append(
            (token, "review", "completed", 1, context, ms[2], None, None, self.current)
        )
        batch.tasks.append(
            (draft, token, "draft", 1, "done", 1, "sup-1", None, ms[0], self.current, None)
        )
        batch.tasks.append((review, token, "review", 1, "done", 1, "sup-1", None, ms[2], self.current, None))  # fmt: skip
        rows = [
            *self._started(ms[0], value, draft),
            (ms[1], "task_claimed", _claimed(draft)),
            (ms[2], "event_accepted", SUBMITTED),
            (ms[2], "task_done", _task(draft)),
            (ms[2], "entered", ENTERED_REVIEW),
            (ms[2], "task_queued", _queued(review, "review")),
            (ms[2], "task_claimed", _claimed(review)),
            (ms[3], "context_changed", VERDICT_CHANGED),
            (ms[3], "event_accepted", REVIEWED),
            (ms[3], "task_done", _task(review)),
            (ms[3], "completed", EMPTY),
        ]
        _ledger(batch, token, rows)

    def _cancelled(self, batch: Batch, token: str, at: datetime, draft: int, value: str) -> None:
        """An ended token an operator cancelled while its first task was queued."""
        start, end = self.stamp(at), self.stamp(at + timedelta(minutes=5))
        context = f'{{"title": {value}, "verdict": null}}'
        batch.tokens.append(
            (token, "draft", "cancelled", 1, context, start, None, None, self.current)
        )
        batch.tasks.append((draft, token, "draft", 1, "cancelled", 0, None, None, start, self.current, None))  # fmt: skip
        rows = [
            *self._started(start, value, draft),
            (end, "task_cancelled", _task(draft)),
            (end, "cancelled", ACTED),
        ]
        _ledger(batch, token, rows)
        batch.audit.append((token, len(rows), end, "cancelled", BY["actor"], BY["via"], BY["reason"], None))  # fmt: skip

    # ------------------------------------------------------------------ live tokens

    def live_at(self, i: int) -> datetime:
        """When the live token i started: spread over the last 30 days."""
        month = timedelta(days=30)
        return self.now - month + month * i / max(1, self.shape.live)

    def live(self, batch: Batch, i: int) -> None:
        """The rows of the live token i (see the module's docstring for the kinds)."""
        token, at, kind = live_id(i), self.live_at(i), self.shape.live_kind(i)
        value = json.dumps(title(i, self.shape))
        batch.token_keys.append(("title", value, token))
        draft = 2 * self.shape.ended + 2 * i + 1
        if kind == "review":
            self._waiting_review(batch, token, at, draft, value)
        elif kind == "timer":
            self._waiting_timer(batch, token, at, draft, value, i)
        else:
            self._queued_other(batch, token, at, draft, value, paused=kind == "paused")

    def _waiting_review(self, batch: Batch, token: str, at: datetime, draft: int, value: str) -> None:  # fmt: skip
        """Active in `review`, its task waiting for a person's answer from outside."""
        review = draft + 1
        ms = [self.stamp(at + timedelta(milliseconds=k)) for k in (0, 5, 6, 9)]
        context = f'{{"title": {value}, "verdict": null}}'
        batch.tokens.append(
            (token, "review", "active", 1, context, ms[2], None, None, self.current)
        )
        batch.tasks.append(
            (draft, token, "draft", 1, "done", 1, "sup-1", None, ms[0], self.current, None)
        )
        batch.tasks.append((review, token, "review", 1, "waiting", 1, "sup-1", None, ms[2], self.current, ms[3]))  # fmt: skip
        rows = [
            *self._started(ms[0], value, draft),
            (ms[1], "task_claimed", _claimed(draft)),
            (ms[2], "event_accepted", SUBMITTED),
            (ms[2], "task_done", _task(draft)),
            (ms[2], "entered", ENTERED_REVIEW),
            (ms[2], "task_queued", _queued(review, "review")),
            (ms[2], "task_claimed", _claimed(review)),
            (ms[3], "note", _note(review, ASKED_REVIEW)),
            (ms[3], "task_waiting", _task(review)),
        ]
        _ledger(batch, token, rows)

    def _waiting_timer(
        self, batch: Batch, token: str, at: datetime, draft: int, value: str, i: int
    ) -> None:
        """Active in `draft`, its task waiting, a routine's timer to submit it later pending."""
        ms = [self.stamp(at + timedelta(milliseconds=k)) for k in (0, 5, 9)]
        due = self.now + timedelta(days=30) + timedelta(days=30) * i / max(1, self.shape.live)
        due = due.replace(microsecond=0)
        context = f'{{"title": {value}, "verdict": null}}'
        batch.tokens.append((token, "draft", "active", 1, context, ms[0], None, None, self.current))
        batch.tasks.append((draft, token, "draft", 1, "waiting", 1, "sup-1", None, ms[0], self.current, ms[2]))  # fmt: skip
        timer = i + 1  # the live token's number: one timer each
        batch.timers.append(
            (
                timer,
                token,
                "draft",
                1,
                "submitted",
                None,
                ms[2],
                self.stamp(due),
                "pending",
                "timer",
            )
        )
        due_at = json.dumps({"event": "submitted", "due_at": iso_z(due)})
        rows = [
            *self._started(ms[0], value, draft),
            (ms[1], "task_claimed", _claimed(draft)),
            (ms[2], "note", _note(draft, ASKED_LATER)),
            (ms[2], "timer_set", due_at),
            (ms[2], "task_waiting", _task(draft)),
        ]
        _ledger(batch, token, rows)

    def _queued_other(
        self, batch: Batch, token: str, at: datetime, draft: int, value: str, paused: bool
    ) -> None:
        """Active (or paused) in `draft` on the other version, its task queued."""
        start = self.stamp(at)
        context = f'{{"title": {value}, "verdict": null}}'
        status = "paused" if paused else "active"
        batch.tokens.append((token, "draft", status, 1, context, start, None, None, self.other))
        batch.tasks.append(
            (draft, token, "draft", 1, "queued", 0, None, None, start, self.other, None)
        )
        rows = self._started(start, value, draft)
        if paused:
            when = self.stamp(at + timedelta(hours=1))
            rows.append((when, "paused", ACTED))
            batch.audit.append((token, len(rows), when, "paused", BY["actor"], BY["via"], BY["reason"], None))  # fmt: skip
        _ledger(batch, token, rows)

    # ------------------------------------------------------------------ shared

    @staticmethod
    def _started(at: Any, value: str, draft: int) -> list[tuple[Any, str, str]]:
        """The four rows of a start into `draft`; `value` the title's JSON."""
        return [
            (at, "started", f'{{"context": {{"title": {value}, "verdict": null}}}}'),
            (at, "event_accepted", STARTED_EVENT),
            (at, "entered", ENTERED_DRAFT),
            (at, "task_queued", _queued(draft, "draft")),
        ]


def _ledger(batch: Batch, token: str, rows: list[tuple[Any, str, str]]) -> None:
    """The ledger rows of one token, numbered from 1 (no idempotency key)."""
    batch.ledger.extend(
        (token, seq, at, kind, None, data) for seq, (at, kind, data) in enumerate(rows, start=1)
    )
