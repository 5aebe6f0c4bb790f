"""One claimed task attempt on the supervisor's side, from a claim's answer to its report."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from stateous.supervisor.outbox import Message

__all__ = ["Grant", "grant_from"]


@dataclass(eq=False)
class Grant:
    """One claimed task attempt, while its routine runs and its messages are delivered."""

    task: int
    token: str
    state: str
    visit: int
    attempt: int
    context: dict[str, Any]
    memory: dict[str, Any]
    entered_by: str
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    lost: bool = False
    reporting: bool = False
    running: bool = False
    stuck: bool = False  # a message could not be delivered during a stop: the rest stay too
    thread: threading.Thread | None = None
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    queue: asyncio.Queue[Message] = field(default_factory=asyncio.Queue)


def grant_from(body: object) -> Grant:
    """A grant from a claim's answer; ValueError says why it is not valid."""
    if not isinstance(body, dict):
        raise ValueError("the answer is not a JSON object")

    def need(key: str, kind: type | tuple[type, ...]) -> Any:
        value = body.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"'{key}' is missing or has the wrong type")
        return value

    entered = body.get("entered_by")
    name = entered.get("name") if isinstance(entered, dict) else None
    if not isinstance(name, str):
        raise ValueError("'entered_by' has no name")
    return Grant(
        task=need("task", int),
        token=need("token", str),
        state=need("state", str),
        visit=need("visit", int),
        attempt=need("attempt", int),
        context=need("context", dict),
        memory=need("memory", dict),
        entered_by=name,
    )
