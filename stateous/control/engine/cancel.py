"""Cancel: `POST /tokens/{id}/cancel`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.audit import acting
from stateous.control.engine.moves import cancel_token
from stateous.control.engine.steering import steered_token
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.store.records import TokenRecord


def cancel(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    token_id: str,
    by: Mapping[str, Any] | None = None,
) -> TokenRecord:
    """Cancel a live top token and its family; with `by`, the top token's `cancelled` row
    carries it."""
    tx = Tx.open(conn, clock, config)
    rule = "only an active or paused token can be cancelled"
    token = steered_token(tx, token_id, "cancelled", ("active", "paused"), rule)
    acting(tx, token.token, frozenset({"cancelled"}), by)
    token = cancel_token(tx, config.body_of(token), token, {})
    tx.flush()
    return token
