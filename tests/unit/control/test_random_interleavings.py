"""Seeded random interleavings of fire, claim, report, heartbeat, pause, resume, cancel and ticks.

Over `sdlc` and the parallel `dev` (join all and join any), on each backend, every step is one
real engine call (refusals are expected and ignored) followed by a check of the engine's
invariants (docs/reliability.md). A failing seed prints its step log, so the run can be replayed
exactly. STATEOUS_RANDOM_STEPS and STATEOUS_RANDOM_SEEDS change the amount (defaults 100 and 3).
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import Connection, text

from stateous.control.clock import FakeClock
from stateous.control.engine.heartbeat import heartbeat
from stateous.control.engine.moves import Schedule
from stateous.control.engine.report import Outcome
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import Refusal
from stateous.control.store.db import Store
from stateous.model.graph import load_graph
from tests.support.graphs import SDLC, graph_text, variant
from tests.unit.control.harness import DEV, Engine

STEPS = int(os.environ.get("STATEOUS_RANDOM_STEPS", "100"))
SEEDS = int(os.environ.get("STATEOUS_RANDOM_SEEDS", "3"))
ADVANCES = (0, 0, 1, 30, 121, 600, 3600, 7200, 2 * 86400 + 1)
SUPERVISORS = ("box-1", "box-2")
ENDED = ("completed", "failed", "cancelled")
OPEN = ("queued", "claimed", "waiting")
# What a paused token's ledger may gain: never a move, an entry or an end.
WHILE_PAUSED = {
    "event_deferred", "task_done", "task_failed", "task_retrying", "note", "memory_set",
    "memory_deleted", "context_changed", "timer_set", "task_waiting", "event_rejected",
}  # fmt: skip


def dev_any() -> dict[str, Any]:
    doc = variant(DEV)
    doc["states"]["reviews"]["join"] = "any"
    return doc


GRAPHS: dict[str, Callable[[], dict[str, Any]]] = {
    "sdlc": lambda: SDLC,
    "dev-all": lambda: DEV,
    "dev-any": dev_any,
}
PAYLOADS: dict[str, Callable[[random.Random], dict[str, Any]]] = {
    "Tests": lambda r: {"passed": r.randint(0, 3), "failed": r.randint(0, 3)},
    "Verdict": lambda r: {"ok": r.random() < 0.6},
}


@dataclass
class Run:
    """One seeded run: the engine, the random source, and what the checks need to remember."""

    engine: Engine
    rnd: random.Random
    tops: list[str] = field(default_factory=list)
    keys: dict[tuple[str, str], int] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    # --- choosing ---------------------------------------------------------------------------

    def tokens(self, where: str = "1 = 1") -> list[tuple[str, str, str, int, str | None]]:
        rows = self.engine.query(
            f"SELECT token, state, status, visit, workflow FROM tokens WHERE {where} ORDER BY token"
        )
        return [(str(a), str(b), str(c), int(d), e) for a, b, c, d, e in rows]

    def payload_for(self, workflow: str | None, event: str) -> dict[str, Any] | None:
        spec = self.engine.config.body(workflow).events.get(event)
        if spec is None or spec.payload is None:
            return None
        return PAYLOADS[spec.payload](self.rnd)

    def context_writes(self) -> dict[str, Any] | None:
        roll = self.rnd.random()
        if roll < 0.7:
            return None
        if roll < 0.95:
            return {"repo": f"acme/{self.rnd.randint(1, 9)}"}
        return {"repo": 5}  # breaks the model: 422, nothing written

    # --- the actions ------------------------------------------------------------------------

    def start(self) -> None:
        token = f"T{len(self.tops) + 1}"
        self.tops.append(token)
        self.engine.start(token, {"repo": "acme/api"})

    def fire(self) -> None:
        live = self.tokens("status IN ('active', 'paused')") or self.tokens()
        if not live:
            return
        token, _state, _status, _visit, workflow = self.rnd.choice(live)
        body = self.engine.config.body(workflow)
        events = [*body.events, "timeout", "nope"]
        event = self.rnd.choice(events)
        key = self.rnd.choice((None, None, "k1", "k2"))
        self.log[-1] += f" {token} {event} key={key}"
        fired = self.engine.fire(token, event, self.payload_for(workflow, event), key)
        if key is not None:
            uses = self.keys.get((token, key), 0)
            if uses:
                assert fired.duplicate, f"the key {key!r} of {token} applied twice"
            if not fired.duplicate:
                self.keys[(token, key)] = 1

    def claim(self) -> None:
        states = [
            name if workflow == self.engine.config.graph.workflow else f"{workflow}/{name}"
            for workflow, body in self.engine.config.graph.bodies.items()
            for name, spec in body.states.items()
            if not spec.is_parallel
        ]
        self.engine.claim(self.rnd.choice(SUPERVISORS), states)

    def report(self) -> None:
        rows = self.engine.query(
            "SELECT t.id, t.state, t.status, t.attempt, t.claimed_by, k.workflow FROM tasks t "
            "JOIN tokens k ON k.token = t.token WHERE t.status IN ('claimed', 'waiting') "
            "ORDER BY t.id"
        )
        if not rows:
            return
        task, state, status, attempt, claimed_by, workflow = self.rnd.choice(rows)
        supervisor = claimed_by if status == "claimed" and self.rnd.random() < 0.8 else None
        if self.rnd.random() < 0.1:
            attempt = max(1, attempt - 1)
        body = self.engine.config.body(workflow)
        roll = self.rnd.random()
        schedules: tuple[Schedule, ...] = ()
        if self.rnd.random() < 0.3:
            event = self.rnd.choice(list(body.events))
            after = self.rnd.choice(("1m", "2h"))
            schedules = (Schedule(event, self.payload_for(workflow, event), after),)
        if roll < 0.15:
            outcome = Outcome("failed", error="boom", attempt=attempt, supervisor=supervisor)
        elif roll < 0.3:
            outcome = Outcome(
                "waiting", context=self.context_writes(), schedules=schedules,
                attempt=attempt, supervisor=supervisor,
            )  # fmt: skip
        else:
            emits = list(body.states[state].emits) or ["nope"]
            event = self.rnd.choice([*emits, *emits, *body.events])
            outcome = Outcome(
                "event", event, self.payload_for(workflow, event), context=self.context_writes(),
                schedules=schedules, attempt=attempt, supervisor=supervisor,
            )  # fmt: skip
        self.log[-1] += f" task {task} {outcome.kind} {outcome.event}"
        self.engine.report(int(task), outcome)

    def beat(self) -> None:
        supervisor = self.rnd.choice(SUPERVISORS)
        ids = [
            int(i) for (i,) in self.engine.query("SELECT id FROM tasks WHERE status = 'claimed'")
        ]
        with self.engine.store.begin() as conn:
            heartbeat(conn, self.engine.clock, self.engine.config, supervisor, ids)

    def steer(self, verb: str) -> None:
        if not self.tops:
            return
        wanted = {"pause": ("active",), "resume": ("paused",), "cancel": ("active", "paused")}
        tops = self.tokens("parent IS NULL")
        fitting = [t for t, _s, status, *_ in tops if status in wanted[verb]]
        pool = self.tops + [t for t, *_ in self.tokens("parent IS NOT NULL")][:3]
        # Mostly a token the verb fits, sometimes any (a refusal is a step too).
        token = self.rnd.choice(fitting if fitting and self.rnd.random() < 0.8 else pool)
        self.log[-1] += f" {token}"
        getattr(self.engine, verb)(token)

    def tick(self) -> None:
        seconds = self.rnd.choice(ADVANCES)
        self.log[-1] += f" +{seconds}s"
        result = self.engine.tick(seconds)
        assert result.failures == 0, "a tick failed"

    def step(self, n: int) -> None:
        actions: list[tuple[str, float, Callable[[], None]]] = [
            ("start", 2, self.start), ("fire", 5, self.fire), ("claim", 4, self.claim),
            ("report", 6, self.report), ("heartbeat", 1, self.beat),
            ("pause", 1.5, lambda: self.steer("pause")),
            ("resume", 1.5, lambda: self.steer("resume")),
            ("cancel", 0.8, lambda: self.steer("cancel")), ("tick", 3, self.tick),
        ]  # fmt: skip
        name, _, action = self.rnd.choices(actions, [w for _, w, _ in actions])[0]
        if not self.tops:
            name, action = "start", self.start
        self.log.append(f"{n}: {name}")
        try:
            action()
        except Refusal as exc:
            self.log[-1] += f" -> {exc.code}"


# --- the invariants -----------------------------------------------------------------------------


class Reader:
    """Read-only queries, on one connection when given (the checks run after every step)."""

    def __init__(self, engine: Engine, conn: Connection | None = None) -> None:
        self.engine, self.conn = engine, conn

    def query(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        if self.conn is None:
            return self.engine.query(sql, **params)
        return [tuple(r) for r in self.conn.execute(text(sql), params)]


def snapshot(engine: Engine) -> dict[str, tuple[str, int, int]]:
    """(state, visit, last seq) of each paused token."""
    rows = Reader(engine).query(
        "SELECT k.token, k.state, k.visit, (SELECT max(seq) FROM ledger l WHERE l.token = k.token)"
        " FROM tokens k WHERE k.status = 'paused'"
    )
    return {str(t): (str(s), int(v), int(m)) for t, s, v, m in rows}


def check(engine: Engine, paused_before: dict[str, tuple[str, int, int]]) -> None:
    """Every invariant of the issue, on the whole database (one read transaction)."""
    with engine.store.begin() as conn:
        _check(engine, Reader(engine, conn), paused_before)


def _check(engine: Engine, reader: Reader, paused_before: dict[str, tuple[str, int, int]]) -> None:
    tokens = {
        str(t): (str(s), str(st), int(v), p, w)
        for t, s, st, v, p, w in reader.query(
            "SELECT token, state, status, visit, parent, workflow FROM tokens"
        )
    }
    open_tasks = reader.query(
        "SELECT token, state, visit FROM tasks WHERE status IN ('queued', 'claimed', 'waiting')"
    )
    per_token = Counter(str(t) for t, _, _ in open_tasks)
    for token, state, visit in open_tasks:
        t_state, t_status, t_visit, _parent, workflow = tokens[str(token)]
        assert t_status in ("active", "paused"), f"{token} ended with an open task"
        assert (t_state, t_visit) == (state, visit), f"{token} has a task of another visit"
        assert not engine.config.body(workflow).states[t_state].is_parallel
        assert per_token[str(token)] == 1, f"{token} has {per_token[str(token)]} open tasks"
    for token, state, visit in reader.query(
        "SELECT token, state, visit FROM timers WHERE status = 'pending'"
    ):
        t_state, t_status, t_visit, *_ = tokens[str(token)]
        assert t_status in ("active", "paused"), f"{token} ended with a pending timer"
        assert (t_state, t_visit) == (state, visit), f"{token} has a timer of another visit"
    for (token,) in reader.query("SELECT DISTINCT token FROM memory"):
        assert tokens[str(token)][1] in ("active", "paused"), f"{token} ended with memory"
    seqs: dict[str, list[int]] = {}
    for token, seq in reader.query("SELECT token, seq FROM ledger ORDER BY token, seq"):
        seqs.setdefault(str(token), []).append(int(seq))
    for token, numbers in seqs.items():
        assert numbers == list(range(1, len(numbers) + 1)), f"{token}: seq not contiguous"
    for token, key, n in reader.query(
        "SELECT token, key, count(*) FROM ledger WHERE key IS NOT NULL GROUP BY token, key"
    ):
        assert n == 1, f"{token}: the key {key!r} is on {n} rows"
    for token, (state, visit, last) in paused_before.items():
        t_state, t_status, t_visit, *_ = tokens[token]
        if t_status != "paused":
            continue
        assert (t_state, t_visit) == (state, visit), f"paused {token} moved"
        kinds = {
            str(k)
            for (k,) in reader.query(
                "SELECT kind FROM ledger WHERE token = :t AND seq > :s", t=token, s=last
            )
        }
        assert kinds <= WHILE_PAUSED, f"paused {token} wrote {sorted(kinds - WHILE_PAUSED)}"
    _check_held_and_joined(engine, reader, tokens)
    for token, (_s, status, _v, parent, _w) in tokens.items():
        if parent is None or status not in ("active", "paused"):
            continue
        p_state, p_status, p_visit, *_ = tokens[str(parent)]
        assert p_status in ("active", "paused"), f"live {token} under an ended parent"
        assert token.startswith(f"{parent}.{p_state}.{p_visit}."), f"live {token} left behind"
        assert (status == "paused") == (p_status == "paused"), f"{token} paused apart"


def _check_held_and_joined(
    engine: Engine, reader: Reader, tokens: dict[str, tuple[str, str, int, Any, Any]]
) -> None:
    """Arrival numbers of the events held now run 1..n per family; `joined` once per visit."""
    rows: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for token, kind, data in reader.query(
        "SELECT token, kind, data FROM ledger WHERE kind IN "
        "('paused', 'event_deferred', 'entered', 'event_accepted') ORDER BY token, seq"
    ):
        rows.setdefault(str(token), []).append(
            (str(kind), json.loads(data) if isinstance(data, str) else data)
        )
    arrivals: dict[str, list[int]] = {}
    for token, (_s, status, _v, _p, _w) in tokens.items():
        mine = rows.get(token, [])
        joins = [d for k, d in mine if k == "event_accepted" and d["event"] == "joined"]
        entries = [d for k, d in mine if k == "entered"]
        parallel = [
            d for d in entries
            if engine.config.body(tokens[token][4]).states[d["state"]].is_parallel
        ]  # fmt: skip
        assert len(joins) <= len(parallel), f"{token}: 'joined' more than once in a visit"
        if status != "paused":
            continue
        last = max((i for i, (k, _) in enumerate(mine) if k == "paused"), default=-1)
        top = token.split(".", 1)[0]
        held = [d["arrival"] for k, d in mine[last + 1 :] if k == "event_deferred"]
        arrivals.setdefault(top, []).extend(held)
    for top, numbers in arrivals.items():
        assert sorted(numbers) == list(range(1, len(numbers) + 1)), f"{top}: arrivals {numbers}"


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_random_interleavings_keep_the_invariants(
    store: Store, clock: FakeClock, graph: str
) -> None:
    config = EngineConfig(load_graph(graph_text(GRAPHS[graph]())))
    seen: set[str] = set()
    for seed in range(SEEDS):
        engine = Engine(store, clock, config)
        run = Run(engine, random.Random(f"{graph}-{seed}"))
        for table in ("ledger", "tokens", "tasks", "timers", "memory", "claims"):
            with store.begin() as conn:
                conn.execute(text(f"DELETE FROM {table}"))  # a fresh start per seed
        try:
            for n in range(STEPS):
                before = snapshot(engine)
                run.step(n)
                check(engine, before)
        except AssertionError as exc:
            trail = "\n".join(run.log[-25:])
            raise AssertionError(
                f"seed {graph}-{seed}, step {len(run.log)}: {exc}\n{trail}"
            ) from exc
        seen |= {str(k) for (k,) in engine.query("SELECT DISTINCT kind FROM ledger")}
        for (data,) in engine.query("SELECT data FROM ledger WHERE kind = 'event_accepted'"):
            event = (json.loads(data) if isinstance(data, str) else data)["event"]
            seen.add(f"accepted {event}")
    # The runs reached the interesting places (held, replayed, dropped, timers, retries, ends).
    wanted = {
        "event_deferred", "event_replayed", "event_dropped", "timer_fired", "task_retrying",
        "task_failed", "completed", "failed", "cancelled", "paused", "resumed",
    }  # fmt: skip
    if graph != "sdlc":
        wanted |= {"branch_started", "accepted joined"}
    assert wanted <= seen, sorted(wanted - seen)
