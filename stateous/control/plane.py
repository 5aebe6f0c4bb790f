"""The running control plane as the API sees it: the store, the graph, the clock, the hold."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import Connection

from stateous.control.clock import Clock, SystemClock
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import NotServing
from stateous.control.store.db import Store

T = TypeVar("T")


@dataclass
class Plane:
    """One control plane: every request runs through `run`, which refuses once the hold is lost."""

    store: Store
    config: EngineConfig
    clock: Clock
    serving: bool = True

    @classmethod
    def of(cls, store: Store, config: EngineConfig, clock: Clock | None = None) -> Plane:
        """A plane with the system clock by default."""
        return cls(store, config, clock or SystemClock())

    def check_serving(self) -> None:
        """Refuse with `503 not_serving` once another control plane took the database."""
        if not self.serving:
            raise NotServing()

    def run(self, call: str, work: Callable[[Connection], T]) -> T:
        """Run `work` in one transaction (a deadlock reruns it once); `not_serving` after a takeover."""
        if not self.serving:
            raise NotServing()
        return self.store.run(call, work)
