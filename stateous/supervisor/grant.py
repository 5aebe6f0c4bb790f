"""One claimed task attempt on the supervisor's side, from a claim's answer to its report.

The grant's fields are those of `stateous.model.wire.GrantWire`, their one definition: an answer
is checked against its annotations and kept as it came.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NotRequired, cast, get_origin, get_type_hints, is_typeddict

from stateous.model.wire import GrantWire
from stateous.supervisor.outbox import Message

__all__ = ["Grant", "grant_from"]


@dataclass(eq=False)
class Grant:
    """One claimed task attempt, while its routine runs and its messages are delivered."""

    claim: GrantWire
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    lost: bool = False
    reporting: bool = False
    running: bool = False
    stuck: bool = False  # a message could not be delivered during a stop: the rest stay too
    # Set when its `def` routine's thread is done with it (None: no such routine started).
    finished: threading.Event | None = None
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    # Set once its report is queued for the sender, or once it is sure to send none.
    queued: asyncio.Event = field(default_factory=asyncio.Event)
    # Its messages that wait for the sender, in order; how many the sender has in hand; set
    # when neither has any (the report waits for the notes, the grant's end for the report).
    pending: deque[Message] = field(default_factory=deque)
    sending: int = 0
    drained: asyncio.Event = field(default_factory=lambda: _set(asyncio.Event()))

    @property
    def task(self) -> int:
        """The task's id."""
        return self.claim["task"]

    @property
    def token(self) -> str:
        """The token's id."""
        return self.claim["token"]

    @property
    def state(self) -> str:
        """The state the routine runs for."""
        return self.claim["state"]

    @property
    def attempt(self) -> int:
        """The attempt that every message of this grant names."""
        return self.claim["attempt"]


def _set(event: asyncio.Event) -> asyncio.Event:
    event.set()
    return event


def grant_from(body: object) -> Grant:
    """A grant from a claim's answer; ValueError says why it is not valid."""
    return Grant(cast(GrantWire, _checked(body, GrantWire)))


@functools.cache
def _hints(wire: type) -> dict[str, Any]:
    """The annotations of a TypedDict, read once (`get_type_hints` evaluates them each call:
    a tenth of a supervisor's CPU under load)."""
    return get_type_hints(wire)


@functools.cache
def _optional(wire: type) -> frozenset[str]:
    """The keys of a TypedDict marked `NotRequired` (its `__optional_keys__` misses them under
    `from __future__ import annotations`)."""
    hints = get_type_hints(wire, include_extras=True)
    return frozenset(key for key, hint in hints.items() if get_origin(hint) is NotRequired)


def _checked(body: object, wire: type) -> dict[str, Any]:
    """`body` when it has every field of the TypedDict `wire` with its type, else ValueError."""
    if not isinstance(body, dict):
        raise ValueError("the answer is not a JSON object")
    optional = _optional(wire)
    for key, hint in _hints(wire).items():
        if key in optional and key not in body:
            continue  # an additive field the control plane may leave out (`traceparent`)
        value = body.get(key)
        if is_typeddict(hint):
            inner = next(iter(_hints(hint)))
            try:
                _checked(value, hint)
            except ValueError:
                raise ValueError(f"'{key}' has no {inner}") from None
            continue
        kind = get_origin(hint) or hint  # dict[str, Any] is checked as a dict
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"'{key}' is missing or has the wrong type")
    return body
