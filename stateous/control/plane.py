"""The running control plane as the API sees it: the store, the graph, the clock, the hold."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from sqlalchemy import Connection

from stateous.control.clock import Clock, SystemClock
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import NotServing
from stateous.control.metrics import Metrics
from stateous.control.store.db import Store
from stateous.control.wakeups import Wakeups

T = TypeVar("T")


@dataclass
class Plane:
    """One control plane: every request runs through `run`, which refuses once the hold is lost."""

    store: Store
    config: EngineConfig
    clock: Clock
    serving: bool = True
    wakeups: Wakeups = field(default_factory=Wakeups)
    metrics: Metrics = field(default_factory=Metrics)

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
        result = self.store.run(call, work)
        # After the commit: wake long-poll claims (spec 70 §2) and count the clock's work.
        self.wakeups.after_commit(call)
        self.metrics.after_commit(call, result)
        return result
