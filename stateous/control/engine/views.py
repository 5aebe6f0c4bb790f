"""The wire shapes of tokens, grants and history entries, built from records."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from stateous.control.clock import iso
from stateous.control.engine.tx import Tx
from stateous.control.store.ledger import last_of_kind
from stateous.control.store.memory import memory_of
from stateous.control.store.records import LedgerRecord, TaskRecord, TokenRecord
from stateous.model.wire import GrantWire, HistoryEntryWire, TokenWire


def token_wire(token: TokenRecord) -> TokenWire:
    """The token object (`parent` only on a child), with its `structure`."""
    return wire_of(
        token.token, token.state, token.status, token.visit, token.context, token.entered_at,
        token.parent, token.structure,
    )  # fmt: skip


def wire_of(
    token: str,
    state: str,
    status: str,
    visit: int,
    context: dict[str, Any],
    entered_at: datetime,
    parent: str | None,
    structure: str | None = None,
) -> TokenWire:
    """`token_wire` of a token's columns (a listing builds a thousand without their record)."""
    wire: TokenWire = {
        "token": token,
        "state": state,
        "status": status,
        "visit": visit,
        "context": context,
        "entered_at": iso(entered_at),
    }
    if parent is not None:
        wire["parent"] = parent
    if structure is not None:
        wire["structure"] = structure
    return wire


def history_entry(row: LedgerRecord) -> HistoryEntryWire:
    """One ledger row as the history route sends it (no `key`)."""
    return {"seq": row.seq, "at": iso(row.at), "kind": row.kind, "data": row.data}


def grant(
    tx: Tx, task: TaskRecord, token: TokenRecord, known: tuple[str, bool] | None = None
) -> GrantWire:
    """The grant of a claimed task. `known`: the event that entered its state
    and whether the state has memory, as read with the task (else read here)."""
    tx.flush()
    if known is None:
        last = last_of_kind(tx.conn, token.token, "event_accepted")
        known = (str(last.data["event"]) if last else "__started__", True)
    entered_by, has_memory = known
    state = task.state if token.workflow is None else f"{token.workflow}/{task.state}"
    return {
        "task": task.id,
        "token": token.token,
        "state": state,
        "visit": task.visit,
        "attempt": task.attempt,
        "context": token.context,
        "memory": memory_of(tx.conn, token.token, task.state) if has_memory else {},
        "entered_by": {"name": entered_by},
    }
