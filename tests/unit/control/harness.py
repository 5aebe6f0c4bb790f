"""A small driver of the engine for the tests of timers, leases, pause/resume/cancel and joins.

Each call is one transaction on a real store, with a fake clock; nothing is mocked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

from stateous.control.clock import FakeClock
from stateous.control.engine import reads
from stateous.control.engine.cancel import cancel
from stateous.control.engine.claim import claim
from stateous.control.engine.fire import Fired, fire
from stateous.control.engine.memory import write_memory
from stateous.control.engine.moves import Schedule
from stateous.control.engine.note import note
from stateous.control.engine.pause import pause
from stateous.control.engine.report import Outcome, report
from stateous.control.engine.resume import resume
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import Refusal
from stateous.control.plane import Plane
from stateous.control.store.db import Store
from stateous.control.store.records import TokenRecord
from stateous.control.ticker import Ticker, TickResult
from stateous.model.wire import GrantWire
from tests.support.graphs import DEV as DEV_SHARED
from tests.support.graphs import variant
from tests.support.rows import ledger_rows


def _spec_dev() -> dict[str, Any]:
    """The parallel example of examples/parallel exactly, built on the shared `DEV`.

    The shared graph has a simpler `security-review`; the example's `triage` retries once and goes
    on to `approved` only when its payload `Verdict` says `ok`, and its `Review` needs `branch`.
    """
    doc = variant(DEV_SHARED)
    security = doc["workflows"]["security-review"]
    security["states"]["triage"] = {"timeout": "1h", "retries": 1, "emits": ["ok"]}
    security["events"]["ok"] = {"payload": "Verdict"}
    security["transitions"] = [
        {"from": "__start__", "to": "triage"},
        {"from": "triage", "to": "approved", "on": "ok", "when": "payload.ok == true"},
        {"from": "triage", "to": "__end__", "on": "ok", "otherwise": True},
        {"from": "approved", "to": "__end__", "on": "fin"},
    ]
    schemas = doc["schemas"]
    schemas["Review"]["properties"]["branch"] = {"type": "string"}
    schemas["Review"]["required"] = ["repo", "branch"]
    schemas["Verdict"] = schemas.pop("Ok")  # the same schema under the example's name, last
    return doc


DEV: dict[str, Any] = _spec_dev()
"""`dev`, `security-review` and `design-review` as examples/parallel compiles them."""


@dataclass
class Engine:
    """The engine over one store, one graph and one fake clock."""

    store: Store
    clock: FakeClock
    config: EngineConfig

    @property
    def ticker(self) -> Ticker:
        """The clock's tick over this store (no hold)."""
        return Ticker(Plane(self.store, self.config, self.clock))

    def start(self, token: str, context: dict[str, Any] | None = None) -> TokenRecord:
        """Start a token."""
        with self.store.begin() as conn:
            return start(conn, self.clock, self.config, token, context).token

    def fire(
        self, token: str, event: str, payload: dict[str, Any] | None = None, key: str | None = None
    ) -> Fired:
        """Fire an event from outside."""
        with self.store.begin() as conn:
            return fire(conn, self.clock, self.config, token, event, payload, key)

    def claim(self, supervisor: str, states: Sequence[str]) -> GrantWire | None:
        """Claim a task (no request id)."""
        with self.store.begin() as conn:
            return claim(conn, self.clock, self.config, supervisor, states, None)

    def report(self, task: int, outcome: Outcome) -> TokenRecord:
        """Report an outcome."""
        with self.store.begin() as conn:
            return report(conn, self.clock, self.config, task, outcome)

    def done(
        self,
        task: int,
        event: str,
        payload: dict[str, Any] | None = None,
        *,
        supervisor: str | None = "box",
        attempt: int | None = None,
        context: dict[str, Any] | None = None,
        schedules: Sequence[Schedule] = (),
    ) -> TokenRecord:
        """Report an event outcome (by default from the holder `box`)."""
        outcome = Outcome(
            "event", event, payload, context=context, schedules=tuple(schedules),
            attempt=attempt, supervisor=supervisor,
        )  # fmt: skip
        return self.report(task, outcome)

    def note(self, task: int, words: str, attempt: int | None) -> None:
        """A note."""
        with self.store.begin() as conn:
            note(conn, self.clock, self.config, task, words, attempt)

    def memory(self, task: int, key: str, value: Any, attempt: int | None) -> None:
        """A memory write."""
        with self.store.begin() as conn:
            write_memory(conn, self.clock, self.config, task, key, value, attempt)

    def pause(self, token: str) -> TokenRecord:
        """Pause a top token."""
        with self.store.begin() as conn:
            return pause(conn, self.clock, self.config, token)

    def resume(self, token: str) -> TokenRecord:
        """Resume a top token."""
        with self.store.begin() as conn:
            return resume(conn, self.clock, self.config, token)

    def cancel(self, token: str) -> TokenRecord:
        """Cancel a top token."""
        with self.store.begin() as conn:
            return cancel(conn, self.clock, self.config, token)

    def tick(self, seconds: float = 0.0) -> TickResult:
        """Move the clock, then run one tick of the clock."""
        self.clock.advance(seconds)
        return self.ticker.tick()

    # --- reading ------------------------------------------------------------------------------

    def rows(self, token: str) -> list[tuple[str, dict[str, Any]]]:
        """(kind, data) of each ledger row of a token, in seq order."""
        with self.store.begin() as conn:
            return [(row[2], row[4]) for row in ledger_rows(conn, token)]

    def full_rows(self, token: str) -> list[tuple[Any, ...]]:
        """(seq, at, kind, key, data) of each ledger row."""
        with self.store.begin() as conn:
            return ledger_rows(conn, token)

    def token(self, token: str) -> dict[str, Any]:
        """The token object of the API."""
        with self.store.begin() as conn:
            return dict(reads.read_token(conn, token))

    def children(self, parent: str) -> list[str]:
        """`GET /tokens?parent=`: the ids of the direct children."""
        with self.store.begin() as conn:
            return sorted(t["token"] for t in reads.list_tokens(conn, None, parent, 100))

    def query(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        """Rows of a read-only query."""
        with self.store.begin() as conn:
            return [tuple(r) for r in conn.execute(text(sql), params)]

    def task(self, task: int) -> tuple[str, int, str | None]:
        """(status, attempt, claimed_by) of a task."""
        rows = self.query("SELECT status, attempt, claimed_by FROM tasks WHERE id = :i", i=task)
        status, attempt, claimed_by = rows[0]
        return str(status), int(attempt), claimed_by

    def timers(self, token: str) -> list[tuple[str, str, str]]:
        """(event, kind, status) of a token's timers, by id."""
        rows = self.query(
            "SELECT event, kind, status FROM timers WHERE token = :t ORDER BY id", t=token
        )
        return [(str(a), str(b), str(c)) for a, b, c in rows]


def refusal(call: Any, *args: Any, **kwargs: Any) -> tuple[int, str, str]:
    """Run a call that must be refused; answer (status, code, sentence)."""
    try:
        call(*args, **kwargs)
    except Refusal as exc:
        return exc.status, exc.code, exc.message
    raise AssertionError("the call was not refused")
