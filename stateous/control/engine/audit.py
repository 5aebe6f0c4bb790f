"""Who did it: mark the ledger row that records an operator's act with `by`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stateous.control.engine.tx import Tx

#: The rows of a fire that record the operator's act: taken, or held while paused.
FIRED = frozenset({"event_accepted", "event_deferred"})
#: The rows of an outside report that record the act: the event taken or held, the task
#: waiting, or the failed attempt.
REPORTED = frozenset({"event_accepted", "event_deferred", "task_waiting", "task_failed"})


def acting(tx: Tx, token: str, kinds: frozenset[str], by: Mapping[str, Any] | None) -> None:
    """The next row of `token` of one of `kinds` gets `by` as its last key (None: no act)."""
    tx.act = (token, kinds, dict(by)) if by is not None else None
