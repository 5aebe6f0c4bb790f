"""A property test (hypothesis): retry and move interleaved with pause, resume, cancel, fires,
claims, reports and lease expiries keep every invariant of the random-interleaving test.

Each example is one run over `sdlc`, the parallel `dev` or a `dev` whose failed join fails the
parent (so retries of failed parents happen); after every step the whole database is checked.
A move of a paused token changes its state on purpose: that token's family is left out of the
"a paused token does not move" check for that one step.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from stateous.control.clock import FakeClock
from stateous.control.engine.move import move
from stateous.control.engine.retry import retry
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import Refusal
from stateous.control.store.db import Store
from stateous.model.graph import load_graph
from tests.support.graphs import SDLC, graph_text, variant
from tests.unit.control.harness import DEV, Engine
from tests.unit.control.test_random_interleavings import Run, check, snapshot

STEPS = 60
TABLES = ("ledger", "tokens", "tasks", "timers", "memory", "claims")


def failing_join() -> dict[str, Any]:
    doc = variant(DEV)
    doc["states"]["reviews"]["join"] = "any"
    doc["transitions"] = [t for t in doc["transitions"] if not t.get("otherwise")]
    return doc


GRAPHS: dict[str, Callable[[], dict[str, Any]]] = {
    "sdlc": lambda: SDLC,
    "dev": lambda: DEV,
    "dev-failing-join": failing_join,
}


class RepairRun(Run):
    """The random run with the operator's retry and move added to its steps."""

    moved: str | None = None

    def retry(self) -> None:
        failed = [t for t, _s, status, *_ in self.tokens("parent IS NULL") if status == "failed"]
        pool = failed if failed and self.rnd.random() < 0.9 else self.tops
        token = self.rnd.choice(pool)
        self.log[-1] += f" {token}"
        with self.engine.store.begin() as conn:
            retry(conn, self.engine.clock, self.engine.config, token)

    def move(self) -> None:
        token = self.rnd.choice(self.tops)
        body = self.engine.config.body(None)
        to = self.rnd.choice([*body.states, "nowhere"])
        writes = self.context_writes()
        self.log[-1] += f" {token} to {to} {writes}"
        self.moved = token
        with self.engine.store.begin() as conn:
            move(conn, self.engine.clock, self.engine.config, token, to, writes)

    def step(self, n: int) -> None:
        self.moved = None
        if not self.tops or self.rnd.random() < 0.75:
            super().step(n)
            return
        name, action = self.rnd.choice((("retry", self.retry), ("move", self.move)))
        self.log.append(f"{n}: {name}")
        try:
            action()
        except Refusal as exc:
            self.log[-1] += f" -> {exc.code}"


def clear(store: Store) -> None:
    for table in TABLES:
        with store.begin() as conn:
            conn.execute(text(f"DELETE FROM {table}"))


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_retry_and_move_keep_the_invariants(store: Store, clock: FakeClock, graph: str) -> None:
    config = EngineConfig(load_graph(graph_text(GRAPHS[graph]())))
    kinds: set[str] = set()

    @settings(
        max_examples=8,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.randoms(use_true_random=False))
    def run_one(rnd: random.Random) -> None:
        clear(store)
        run = RepairRun(Engine(store, clock, config), rnd)
        try:
            for n in range(STEPS):
                before = snapshot(run.engine)
                run.step(n)
                if run.moved is not None:
                    before = {t: v for t, v in before.items() if not t.startswith(run.moved)}
                check(run.engine, before)
        except AssertionError as exc:
            trail = "\n".join(run.log[-25:])
            raise AssertionError(f"step {len(run.log)}: {exc}\n{trail}") from exc
        kinds.update(str(k) for (k,) in run.engine.query("SELECT DISTINCT kind FROM ledger"))

    run_one()
    assert {"retried", "moved"} <= kinds, sorted(kinds)
