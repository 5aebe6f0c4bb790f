"""What a database error means to the store: its SQLSTATE, a rerun, or `503 database_busy`."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError

from stateous.control.errors import DatabaseBusy

__all__ = ["RETRY_STATES", "busy", "is_retry", "sqlstate"]

#: SQLSTATEs of a deadlock and a serialization failure: the operations are run once more.
RETRY_STATES = frozenset({"40P01", "40001"})


def sqlstate(exc: DBAPIError) -> str | None:
    """The SQLSTATE of a database error (None when the driver has none)."""
    orig = exc.orig
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return state if isinstance(state, str) else None


def is_retry(exc: DBAPIError) -> bool:
    """Whether the database stopped the transaction for a deadlock or a serialization failure."""
    return sqlstate(exc) in RETRY_STATES


def busy(exc: BaseException) -> DatabaseBusy:
    """`503 database_busy` caused by `exc`."""
    failure = DatabaseBusy()
    failure.__cause__ = exc
    return failure
