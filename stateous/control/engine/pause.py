"""Pause: `POST /tokens/{id}/pause`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.audit import acting
from stateous.control.engine.hold import family
from stateous.control.engine.steering import steered_token
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.store.records import TokenRecord
from stateous.control.store.tokens import get_token


def pause(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    token_id: str,
    by: Mapping[str, Any] | None = None,
) -> TokenRecord:
    """Pause a top token and each active member of its family, depth first; with `by`, the top
    token's `paused` row carries it."""
    tx = Tx.open(conn, clock, config)
    token = steered_token(tx, token_id, "paused", ("active",), "only an active token can be paused")
    acting(tx, token.token, frozenset({"paused"}), by)
    for member in family(tx, token.token):
        if member.status == "active":
            tx.update_token(member.token, status="paused")
            tx.write(member.token, "paused", {})
    tx.flush()
    return get_token(conn, token.token) or token
