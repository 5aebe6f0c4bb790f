"""One engine transaction: its time, its ledger writer and the family lock."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.search import searching, write_keys
from stateous.control.engine.versions import Versions
from stateous.control.store import audit, ledger, memory, tasks, tokens
from stateous.control.store.dialect import Dialect, dialect_of
from stateous.control.store.group import group_time
from stateous.control.store.locks import lock_family, lock_task_family
from stateous.control.store.records import LedgerRecord, TokenRecord
from stateous.control.store.writes import write_changes
from stateous.model.graph import Graph, WorkflowBody


class EngineConfig:
    """What every internal workflow needs besides the connection and the clock: the versions
    tokens run on and the lease."""

    def __init__(
        self,
        graph: Graph,
        lease: timedelta = timedelta(minutes=2),
        versions: Versions | None = None,
    ) -> None:
        self.versions = versions if versions is not None else Versions(graph)
        self.lease = lease
        #: (structure, key) → (tokens done, tokens to do) of each search key this control
        #: plane is filling, for `409 search_not_ready`'s progress.
        self.filling: dict[tuple[str, str], tuple[int, int]] = {}

    @property
    def graph(self) -> Graph:
        """The current graph: the one new tokens start on."""
        return self.versions.current

    def body(self, workflow: str | None, structure: str | None = None) -> WorkflowBody:
        """The body of a workflow (None: the main one) of a structure's graph (None: the
        current graph)."""
        graph = self.versions.of(structure)
        return graph.bodies[workflow or graph.workflow]

    def body_of(self, token: TokenRecord) -> WorkflowBody:
        """The body a token runs on: its workflow in its own version's graph."""
        return self.body(token.workflow, token.structure)


@dataclass
class Tx:
    """The state of one transaction: `now` is read once, so every row shares its `at`.

    Ledger rows are buffered and numbered per token; they are flushed before any ledger read
    and when the transaction's work ends. The changes of token rows (`update_token`) and the
    deletion of an ended token's memory on Postgres are buffered too, merged per token: they
    are written with the ledger rows at `flush` (on Postgres in the ledger's own statement),
    or before any statement run through `conn`, so that a read never sees a token as it was
    before (one UPDATE of a token per operation instead of one per change).
    """

    #: The connection as it is, buffered changes not written: only for a statement that reads
    #: no row of `tokens` or `memory` (`conn` for anything else).
    raw: Connection
    now: datetime
    config: EngineConfig
    #: The database's ways (what it locks, whether writes are fused), chosen once.
    dialect: Dialect
    _seq: dict[str, int] = field(default_factory=dict)
    _rows: list[dict[str, Any]] = field(default_factory=list)
    #: The columns to set, by token, in the order of the first change of each token.
    _changes: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Ended tokens whose memory rows are to be deleted (Postgres only).
    _forget: set[str] = field(default_factory=set)
    new_tokens: set[str] = field(default_factory=set)
    #: Search keys: new top tokens' contexts, and tokens whose context or
    #: structure changed, whose rows `flush` writes; both stay empty without search keys.
    _started: dict[str, Any] = field(default_factory=dict)
    _rekey: set[str] = field(default_factory=set)
    #: An operator's act: the next row of token `act[0]` whose kind is in `act[1]`
    #: gets `by` (`act[2]`) as the last key of its data.
    act: tuple[str, frozenset[str], dict[str, Any]] | None = None

    @classmethod
    def open(cls, conn: Connection, clock: Clock, config: EngineConfig) -> Tx:
        """Begin the engine's view of the caller's transaction."""
        # In a shared transaction, never before the `at` of the operation before.
        return cls(raw=conn, now=group_time(clock.now()), config=config, dialect=dialect_of(conn))

    @property
    def conn(self) -> Connection:
        """The connection, for any statement: the buffered token changes are written first."""
        if self._changes or self._forget:
            self._write_changes(())
        return self.raw

    @property
    def locks(self) -> bool:
        """Whether families are locked (`Dialect.locks`: Postgres). SQLite has one writer at a
        time, so what a transaction read stays true until it commits, and nothing needs
        reading twice."""
        return self.dialect.locks

    @property
    def graph(self) -> Graph:
        """The current graph (new tokens start on it)."""
        return self.config.graph

    def write(self, token: str, kind: str, data: dict[str, Any], key: str | None = None) -> None:
        """Append a ledger row to `token`'s ledger (numbered max + 1, in writing order)."""
        seq = self._seq.get(token)
        if seq is None:
            seq = 0 if token in self.new_tokens else ledger.last_seq(self.raw, token)
        seq += 1
        self._seq[token] = seq
        if kind == "started" and "parent" not in data and searching(self.config.versions):
            self._started[token] = data["context"]
        if self.act is not None and self.act[0] == token and kind in self.act[1]:
            data, self.act = {**data, "by": self.act[2]}, None
        self._rows.append(
            {"token": token, "seq": seq, "at": self.now, "kind": kind, "key": key, "data": data}
        )

    def know_seq(self, token: str, seq: int) -> None:
        """The token's highest seq as read with it, so its next row needs no read of its own."""
        self._seq.setdefault(token, seq)

    def update_token(self, token: str, **values: Any) -> None:
        """Change columns of a token's row: buffered, a later value of a column wins."""
        self._changes.setdefault(token, {}).update(values)
        # A token live again (resume, retry, move) may have failed before a key was added:
        # the backfill fills live tokens only, so it gets its rows now.
        rekey = "context" in values or "structure" in values or values.get("status") == "active"
        if rekey and searching(self.config.versions):
            self._rekey.add(token)

    def delete_all_memory(self, token: str) -> None:
        """Delete every memory row of a token (it ended). Where writes are fused (Postgres),
        with the token's changes at the next write of them (a data-modifying WITH of the same
        statement); on SQLite at once (its statements cost no round trip, and it has no such
        WITH)."""
        if self.dialect.fuses_writes:
            self._forget.add(token)
        else:
            memory.delete_all_memory(self.raw, token)

    def flush(self) -> None:
        """Write the buffered token changes and insert the buffered ledger rows."""
        rows, self._rows = self._rows, []
        self._write_changes(rows)
        audit.insert_acts(self.raw, rows)  # the audit index, in the same transaction
        if self._started or self._rekey:
            started, self._started = self._started, {}
            rekey, self._rekey = self._rekey, set()
            write_keys(self.raw, self.config.versions, started, rekey)

    def _write_changes(self, rows: Sequence[dict[str, Any]]) -> None:
        changes, self._changes = self._changes, {}
        forget, self._forget = self._forget, set()
        write_changes(self.raw, changes, forget, rows)

    def ledger(self, token: str, kinds: Iterable[str]) -> list[LedgerRecord]:
        """The token's ledger rows of some kinds, including those written in this transaction."""
        wanted = set(kinds)
        if token in self.new_tokens:
            return [
                LedgerRecord(r["token"], r["seq"], r["at"], r["kind"], r["key"], r["data"])
                for r in self._rows
                if r["token"] == token and r["kind"] in wanted
            ]
        self.flush()
        return ledger.ledger_of(self.conn, token, wanted)

    # --- locks ----------------------------------------------------------------------------

    def top_of(self, token: TokenRecord) -> str:
        """The id of the token's top token (following `parent` upward)."""
        current = token
        while current.parent is not None:
            parent = tokens.get_token(self.conn, current.parent)
            if parent is None:
                return current.parent
            current = parent
        return current.token

    def lock_id(self, top: str) -> None:
        """Take the family lock of a top token id (Postgres; SQLite has one writer)."""
        if self.locks:
            lock_family(self.conn, top)

    def lock_token(self, token_id: str) -> TokenRecord | None:
        """Lock the family of a token, then read the token (None: no such token)."""
        if not self.locks:
            return tokens.get_token(self.conn, token_id)
        # Most tokens an operator or the clock acts on are top tokens: take the lock of the
        # family this id would head, then read once. A child's own id heads no family, so that
        # lock keeps no one waiting; the child then takes its top's lock and reads again. Every
        # path takes such a key before a top's, never after one, so no two wait on each other.
        self.lock_id(token_id)
        token = tokens.get_token(self.conn, token_id)
        if token is None or token.parent is None:
            return token
        self.lock_id(self.top_of(token))
        return tokens.get_token(self.conn, token_id)

    def lock_task_family(self, task_id: int) -> None:
        """Take the family lock of a task's token in one statement (Postgres): the key of the
        token's parent, or its own when it has none; a token two levels down or more then takes
        its top's lock too (see `lock_token` for the order). No such task: no lock."""
        if not self.locks:
            return
        if lock_task_family(self.conn, task_id):
            first = tasks.task_and_token(self.conn, task_id)
            if first is not None:
                self.lock_id(self.top_of(first[1]))
