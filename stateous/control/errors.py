"""The refusals of the control plane: each a StateousError with a stable code."""

from __future__ import annotations

from stateous.model.errors import StateousError


class Refusal(StateousError):
    """A request the control plane refuses; `status` is its HTTP status."""

    status: int = 422

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message, code=code)
        self.status = status


class RecordedRefusal(Refusal):
    """A refusal whose ledger row (`event_rejected`) must be committed before it is answered.

    The store's transaction commits when it sees this error, then lets it propagate.
    """


class DatabaseBusy(Refusal):
    """The database could not take the request now (a time limit, a lock, a lost connection)."""

    def __init__(self) -> None:
        super().__init__(
            "database_busy", "the database cannot take this request now; try again", 503
        )


class NotServing(Refusal):
    """Another control plane took the database; this one does no more work."""

    def __init__(self) -> None:
        super().__init__(
            "not_serving",
            "another control plane took this database; this control plane does no more work; "
            "trying again does not help: stop this server",
            503,
        )


class StoreError(StateousError):
    """The database cannot be used (start-up): the sentence says why."""


def not_found(code: str, message: str) -> Refusal:
    """A `404` refusal."""
    return Refusal(code, message, 404)


def conflict(code: str, message: str) -> Refusal:
    """A `409` refusal that writes nothing."""
    return Refusal(code, message, 409)


def invalid(code: str, message: str) -> Refusal:
    """A `422` refusal."""
    return Refusal(code, message, 422)


def rejected(code: str, message: str) -> RecordedRefusal:
    """A `409` refusal whose `event_rejected` row is committed before the answer."""
    return RecordedRefusal(code, message, 409)
