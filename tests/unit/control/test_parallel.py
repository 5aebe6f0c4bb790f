"""Parallel states and joins, `into=` on a parallel state, and the worked examples row by row:
join all, join any, a pause across a family, a parent that fails while children run."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from stateous.control.clock import FakeClock, iso
from stateous.control.engine.heartbeat import heartbeat
from stateous.control.engine.moves import Schedule
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store
from stateous.model.graph import load_graph
from tests.support.graphs import graph_text, variant
from tests.unit.control.harness import DEV, Engine, refusal

T0 = datetime(2026, 10, 6, 10, 0, 0, 250000)
ALL = [
    "coding",
    "merging",
    "security-review/triage",
    "security-review/approved",
    "design-review/look",
]
SEC = "TICKET-1.reviews.1.security-review"
DES = "TICKET-1.reviews.1.design-review"
CTX = {"repo": "acme/api", "branch": "main"}


def at(n: float) -> str:
    return str(T0 + timedelta(seconds=n))


def engine_for(store: Store, clock: FakeClock, doc: dict[str, Any]) -> Engine:
    clock.set(T0)
    return Engine(store, clock, EngineConfig(load_graph(graph_text(doc))))


def dev(join: str = "all") -> dict[str, Any]:
    doc = variant(DEV)
    doc["states"]["reviews"]["join"] = join
    return doc


def entry(token: str, final: str, payload: Any, context: dict[str, Any] = CTX) -> dict[str, Any]:
    workflow = token.rsplit(".", 1)[1]
    return {
        "workflow": workflow, "token": token, "status": "completed", "final": final,
        "payload": payload, "context": context,
    }  # fmt: skip


def into_reviews(engine: Engine, token: str = "TICKET-1") -> None:
    """Start `token` and bring it into `reviews` (task 1 claimed, then `done` at t+2)."""
    engine.start(token, {"repo": "acme/api"})
    engine.clock.set(T0 + timedelta(seconds=1))
    engine.claim("box", ALL)
    engine.clock.set(T0 + timedelta(seconds=2))
    engine.done(1, "done")


def test_join_all(store: Store, clock: FakeClock) -> None:
    """`join="all"`: both children end, and the join takes the parent back to `coding`."""
    engine = engine_for(store, clock, dev())
    into_reviews(engine)
    for second, action in (
        (3, lambda: engine.claim("box", ALL)),
        (4, lambda: engine.done(2, "ok", {"ok": True})),
        (5, lambda: engine.claim("box", ALL)),
        (6, lambda: engine.done(3, "seen")),
        (7, lambda: engine.claim("box", ALL)),
        (8, lambda: engine.done(4, "fin")),
    ):
        clock.set(T0 + timedelta(seconds=second))
        action()
    joined = {"branches": [entry(SEC, "approved", {"ok": True}), entry(DES, "look", None)]}
    assert [(r[0], r[1], r[2], r[4]) for r in engine.full_rows("TICKET-1")] == [
        (1, at(0), "started", {"context": CTX}),
        (2, at(0), "event_accepted", {"event": "__started__", "payload": None, "state": "__start__"}),
        (3, at(0), "entered", {"state": "coding", "visit": 1}),
        (4, at(0), "task_queued", {"task": 1, "state": "coding"}),
        (5, at(1), "task_claimed", {"task": 1, "supervisor": "box", "attempt": 1}),
        (6, at(2), "event_accepted", {"event": "done", "payload": None, "state": "coding"}),
        (7, at(2), "task_done", {"task": 1}),
        (8, at(2), "entered", {"state": "reviews", "visit": 1}),
        (9, at(2), "timer_set", {"event": "timeout", "due_at": iso(T0 + timedelta(days=2, seconds=2))}),
        (10, at(2), "branch_started", {"workflow": "security-review", "token": SEC}),
        (11, at(2), "branch_started", {"workflow": "design-review", "token": DES}),
        (12, at(8), "event_accepted", {"event": "joined", "payload": joined, "state": "reviews"}),
        (13, at(8), "entered", {"state": "coding", "visit": 2}),
        (14, at(8), "task_queued", {"task": 5, "state": "coding"}),
    ]  # fmt: skip
    assert [(r[1], r[2], r[4]) for r in engine.full_rows(SEC)] == [
        (at(2), "started", {"context": CTX, "parent": "TICKET-1"}),
        (at(2), "event_accepted", {"event": "__started__", "payload": None, "state": "__start__"}),
        (at(2), "entered", {"state": "triage", "visit": 1}),
        (at(2), "task_queued", {"task": 2, "state": "triage"}),
        (at(2), "timer_set", {"event": "timeout", "due_at": iso(T0 + timedelta(hours=1, seconds=2))}),
        (at(3), "task_claimed", {"task": 2, "supervisor": "box", "attempt": 1}),
        (at(4), "event_accepted", {"event": "ok", "payload": {"ok": True}, "state": "triage"}),
        (at(4), "task_done", {"task": 2}),
        (at(4), "entered", {"state": "approved", "visit": 1}),
        (at(4), "task_queued", {"task": 4, "state": "approved"}),
        (at(7), "task_claimed", {"task": 4, "supervisor": "box", "attempt": 1}),
        (at(8), "event_accepted", {"event": "fin", "payload": None, "state": "approved"}),
        (at(8), "task_done", {"task": 4}),
        (at(8), "completed", {}),
    ]  # fmt: skip
    assert [(r[1], r[2]) for r in engine.full_rows(DES)] == [
        (at(2), "started"), (at(2), "event_accepted"), (at(2), "entered"), (at(2), "task_queued"),
        (at(5), "task_claimed"), (at(6), "event_accepted"), (at(6), "task_done"),
        (at(6), "completed"),
    ]  # fmt: skip
    assert engine.timers("TICKET-1") == [("timeout", "timeout", "cancelled")]
    assert engine.children("TICKET-1") == [DES, SEC]
    assert engine.token(SEC)["parent"] == "TICKET-1"


def test_a_child_state_is_claimed_as_workflow_slash_state(store: Store, clock: FakeClock) -> None:
    engine = engine_for(store, clock, dev())
    into_reviews(engine)
    assert engine.claim("box", ["triage", "look"]) is None  # names of the main workflow only
    grant = engine.claim("box", ["security-review/triage"])
    assert grant is not None
    assert (grant["task"], grant["token"], grant["state"]) == (2, SEC, "security-review/triage")
    assert grant["entered_by"] == {"name": "__started__"} and grant["context"] == CTX
    engine.done(2, "ok", {"ok": True})
    grant = engine.claim("box", ["security-review/approved"])
    assert grant is not None and grant["entered_by"] == {"name": "ok"}


def test_join_any_cancels_the_other_child(store: Store, clock: FakeClock) -> None:
    """`join="any"`: the design child completes first; the claimed security child is cancelled."""
    engine = engine_for(store, clock, dev("any"))
    into_reviews(engine)
    engine.claim("box", ALL)  # task 2, security
    engine.claim("box", ALL)  # task 3, design
    engine.memory(2, "notes", "half done", 1)
    engine.done(3, "seen")
    joined = {"branches": [entry(DES, "look", None)]}
    assert engine.rows("TICKET-1")[-3:] == [
        ("event_accepted", {"event": "joined", "payload": joined, "state": "reviews"}),
        ("entered", {"state": "coding", "visit": 2}),
        ("task_queued", {"task": 4, "state": "coding"}),
    ]
    assert engine.rows(DES)[-3:] == [
        ("event_accepted", {"event": "seen", "payload": None, "state": "look"}),
        ("task_done", {"task": 3}),
        ("completed", {}),
    ]
    assert engine.rows(SEC)[-2:] == [
        ("task_cancelled", {"task": 2}),
        ("cancelled", {"reason": "the parent left 'reviews' on 'joined'"}),
    ]
    assert engine.query("SELECT * FROM memory") == []
    with store.begin() as conn:
        assert heartbeat(conn, clock, engine.config, "box", [2]) == [2]


def test_join_any_while_paused_the_first_arrival_wins(store: Store, clock: FakeClock) -> None:
    """`join="any"` with both reports held while paused: at the resume the child whose event
    arrived first goes on, and the other is cancelled."""
    engine = engine_for(store, clock, dev("any"))
    into_reviews(engine)
    engine.claim("box", ALL)
    engine.claim("box", ALL)
    engine.pause("TICKET-1")
    engine.done(3, "seen")
    engine.done(2, "ok", {"ok": True})
    n_parent, n_sec, n_des = (len(engine.rows(t)) for t in ("TICKET-1", SEC, DES))
    engine.resume("TICKET-1")
    assert engine.rows("TICKET-1")[n_parent:] == [
        ("resumed", {}),
        ("event_accepted", {
            "event": "joined", "payload": {"branches": [entry(DES, "look", None)]},
            "state": "reviews",
        }),
        ("entered", {"state": "coding", "visit": 2}),
        ("task_queued", {"task": 4, "state": "coding"}),
    ]  # fmt: skip
    assert engine.rows(DES)[n_des:] == [
        ("resumed", {}),
        ("event_replayed", {"event": "seen"}),
        ("event_accepted", {"event": "seen", "payload": None, "state": "look"}),
        ("completed", {}),
    ]
    assert engine.rows(SEC)[n_sec:] == [
        ("resumed", {}),
        ("cancelled", {"reason": "the parent left 'reviews' on 'joined'"}),
        ("event_dropped", {
            "event": "ok", "reason": f"token {SEC!r} is cancelled; it takes no events",
        }),
    ]  # fmt: skip


def test_cancel_of_a_paused_family(store: Store, clock: FakeClock) -> None:
    """The cancel of a paused family: one transaction, every held event dropped."""
    engine = engine_for(store, clock, dev())
    into_reviews(engine)
    engine.pause("TICKET-1")
    engine.fire(DES, "seen")
    engine.fire("TICKET-1", "merged")
    assert engine.rows(DES)[-1] == (
        "event_deferred", {"event": "seen", "payload": None, "arrival": 1},
    )  # fmt: skip
    assert engine.rows("TICKET-1")[-1] == (
        "event_deferred", {"event": "merged", "payload": None, "arrival": 2},
    )  # fmt: skip
    clock.advance(5)
    engine.cancel("TICKET-1")
    dropped = "the token was cancelled"
    assert engine.rows("TICKET-1")[-2:] == [
        ("event_dropped", {"event": "merged", "reason": dropped}),
        ("cancelled", {}),
    ]
    assert engine.rows(SEC)[-2:] == [
        ("task_cancelled", {"task": 2}),
        ("cancelled", {"reason": "the parent was cancelled"}),
    ]
    assert engine.rows(DES)[-3:] == [
        ("event_dropped", {"event": "seen", "reason": dropped}),
        ("task_cancelled", {"task": 3}),
        ("cancelled", {"reason": "the parent was cancelled"}),
    ]
    stamps = {r[1] for t in ("TICKET-1", SEC, DES) for r in engine.full_rows(t)[-2:]}
    assert stamps == {at(7)}
    assert engine.query("SELECT count(*) FROM timers WHERE status = 'pending'") == [(0,)]


def test_pause_across_a_family_and_the_replay_order(store: Store, clock: FakeClock) -> None:
    """A pause across a family: reports and fires are held, and the resume replays them in the
    order they arrived."""
    sec, des = "TICKET-2.reviews.1.security-review", "TICKET-2.reviews.1.design-review"
    engine = engine_for(store, clock, dev())
    into_reviews(engine, "TICKET-2")
    engine.claim("box", ALL)
    engine.claim("box", ALL)
    n = {t: len(engine.rows(t)) for t in ("TICKET-2", sec, des)}
    engine.pause("TICKET-2")
    engine.done(3, "seen")
    fin = Schedule("fin", None, "10m")
    engine.done(2, "ok", {"ok": True}, context={"branch": "dev"}, schedules=[fin])
    engine.fire(sec, "fin", key="k1")
    assert engine.fire(sec, "fin", key="k1").duplicate
    engine.fire("TICKET-2", "merged")
    clock.advance(30)
    engine.resume("TICKET-2")
    resumed_at = T0 + timedelta(seconds=32)
    joined = {
        "branches": [
            entry(sec, "approved", {"ok": True}, {"repo": "acme/api", "branch": "dev"}),
            entry(des, "look", None),
        ]
    }
    assert engine.rows("TICKET-2")[n["TICKET-2"] :] == [
        ("paused", {}),
        ("event_deferred", {"event": "merged", "payload": None, "arrival": 4}),
        ("resumed", {}),
        ("event_accepted", {"event": "joined", "payload": joined, "state": "reviews"}),
        ("entered", {"state": "coding", "visit": 2}),
        ("task_queued", {"task": 5, "state": "coding"}),
        ("event_dropped", {"event": "merged", "reason": "no transition for 'merged' from 'coding'"}),
    ]  # fmt: skip
    assert engine.rows(des)[n[des] :] == [
        ("paused", {}),
        ("event_deferred", {
            "event": "seen", "payload": None, "state": "look", "visit": 1, "task": 3, "arrival": 1,
        }),
        ("task_done", {"task": 3}),
        ("resumed", {}),
        ("event_replayed", {"event": "seen"}),
        ("event_accepted", {"event": "seen", "payload": None, "state": "look"}),
        ("completed", {}),
    ]  # fmt: skip
    assert engine.rows(sec)[n[sec] :] == [
        ("paused", {}),
        ("event_deferred", {
            "event": "ok", "payload": {"ok": True}, "state": "triage", "visit": 1, "task": 2,
            "arrival": 2, "context": {"branch": "dev"},
            "schedules": [{"event": "fin", "after": "10m"}],
        }),
        ("task_done", {"task": 2}),
        ("event_deferred", {"event": "fin", "payload": None, "arrival": 3}),
        ("resumed", {}),
        ("event_replayed", {"event": "ok"}),
        ("context_changed", {"keys": ["branch"]}),
        ("timer_set", {"event": "fin", "due_at": iso(resumed_at + timedelta(minutes=10))}),
        ("event_accepted", {"event": "ok", "payload": {"ok": True}, "state": "triage"}),
        ("entered", {"state": "approved", "visit": 1}),
        ("task_queued", {"task": 4, "state": "approved"}),
        ("event_replayed", {"event": "fin"}),
        ("event_accepted", {"event": "fin", "payload": None, "state": "approved"}),
        ("task_cancelled", {"task": 4}),
        ("completed", {}),
    ]  # fmt: skip
    keyed = [r for r in engine.full_rows(sec) if r[3] is not None]
    assert [(r[2], r[3]) for r in keyed] == [("event_deferred", "k1")]


def test_a_parent_that_fails_while_children_run(store: Store, clock: FakeClock) -> None:
    """Both timeouts due on one tick fire in `due_at` order."""
    doc = dev()
    doc["transitions"] = [t for t in doc["transitions"] if t.get("on") != "timeout"]
    engine = engine_for(store, clock, doc)
    engine.start("TICKET-1", {"repo": "acme/api"})
    engine.fire("TICKET-1", "done")
    result = engine.tick(2 * 86400)
    assert result.timers == 2
    assert engine.rows(SEC)[-3:] == [
        ("timer_fired", {"event": "timeout"}),
        ("task_cancelled", {"task": 2}),
        ("failed", {"reason": "'triage' timed out: no transition for 'timeout' from 'triage'"}),
    ]
    parent_reason = "'reviews' timed out: no transition for 'timeout' from 'reviews'"
    assert engine.rows("TICKET-1")[-2:] == [
        ("timer_fired", {"event": "timeout"}),
        ("failed", {"reason": parent_reason}),
    ]
    assert engine.rows(DES)[-2:] == [
        ("task_cancelled", {"task": 3}),
        ("cancelled", {"reason": f"the parent failed: {parent_reason}"}),
    ]


def test_a_join_that_no_transition_takes_fails_the_parent(store: Store, clock: FakeClock) -> None:
    doc = dev()
    doc["transitions"] = [t for t in doc["transitions"] if not t.get("otherwise")]
    doc["workflows"]["security-review"]["transitions"][2] = {
        "from": "triage", "to": "__end__", "on": "ok", "when": "payload.ok == false",
    }  # fmt: skip
    engine = engine_for(store, clock, doc)
    engine.start("TICKET-1", {"repo": "acme/api"})
    engine.fire("TICKET-1", "done")
    engine.fire(DES, "seen")
    engine.fire(SEC, "ok", {"ok": False})
    assert engine.rows("TICKET-1")[-1] == (
        "failed", {"reason": (
            "the join of 'reviews' cannot move the token: no guard matched 'joined' from "
            "'reviews', and no otherwise"
        )},
    )  # fmt: skip
    assert engine.rows(SEC)[-1] == ("completed", {})


def test_into_on_a_parallel_state_saves_the_joined_payload(store: Store, clock: FakeClock) -> None:
    doc = dev()
    doc["states"]["reviews"]["into"] = "reviews"
    doc["schemas"]["Ticket"]["properties"]["reviews"] = {
        "anyOf": [{"type": "object"}, {"type": "null"}],
        "default": None,
    }
    engine = engine_for(store, clock, doc)
    engine.start("TICKET-1", {"repo": "acme/api"})
    engine.fire("TICKET-1", "done")
    engine.fire(DES, "seen")
    engine.fire(SEC, "ok", {"ok": False})
    # `payload` is what brought the child into `triage` (`__started__`), not the final `ok`.
    joined = {"branches": [entry(SEC, "triage", None), entry(DES, "look", None)]}
    rows = engine.rows("TICKET-1")
    assert rows[-4:-2] == [
        ("context_changed", {"keys": ["reviews"]}),
        ("event_accepted", {"event": "joined", "payload": joined, "state": "reviews"}),
    ]
    assert engine.token("TICKET-1")["context"]["reviews"] == joined


def test_an_event_fired_at_the_parent_cancels_the_children(store: Store, clock: FakeClock) -> None:
    doc = dev()
    doc["events"]["abandon"] = {}
    doc["transitions"].append({"from": "reviews", "to": "__end__", "on": "abandon"})
    engine = engine_for(store, clock, doc)
    engine.start("TICKET-1", {"repo": "acme/api"})
    engine.fire("TICKET-1", "done")
    engine.fire("TICKET-1", "abandon")
    reason = "the parent left 'reviews' on 'abandon'"
    assert engine.rows(SEC)[-2:] == [
        ("task_cancelled", {"task": 2}),
        ("cancelled", {"reason": reason}),
    ]
    assert engine.rows(DES)[-1] == ("cancelled", {"reason": reason})
    assert engine.rows("TICKET-1")[-1] == ("completed", {})


def test_the_128_character_limit_and_a_taken_child_id(store: Store, clock: FakeClock) -> None:
    engine = engine_for(store, clock, dev())
    long_id = "L" * 103  # + ".reviews.1.security-review" = 129 characters
    engine.start(long_id, {"repo": "r"})
    child = f"{long_id}.reviews.1.security-review"
    sentence = (
        f"the child {child!r} of 'reviews' would have an id longer than 128 characters; "
        "use a shorter token id"
    )
    assert refusal(engine.fire, long_id, "done") == (409, "event_not_allowed", sentence)
    assert engine.rows(long_id)[-1] == ("event_rejected", {"event": "done", "reason": sentence})
    assert engine.token(long_id)["state"] == "coding"
    engine.start("t.REVIEWS.1.design-review", {"repo": "r"})
    engine.start("T", {"repo": "r"})
    taken = "the child id 'T.reviews.1.design-review' is taken by another token"
    assert refusal(engine.fire, "T", "done") == (409, "event_not_allowed", taken)
    assert engine.children("T") == []


NESTED: dict[str, Any] = {
    "stateous": 1,
    "workflow": "outer",
    "states": {"fan": {"parallel": ["mid"], "join": "all"}},
    "events": {},
    "transitions": [
        {"from": "__start__", "to": "fan"},
        {"from": "fan", "to": "__end__", "on": "joined"},
    ],
    "workflows": {
        "mid": {
            "states": {"inner": {"parallel": ["leaf"], "join": "any"}},
            "events": {},
            "transitions": [
                {"from": "__start__", "to": "inner"},
                {"from": "inner", "to": "__end__", "on": "joined"},
            ],
        },
        "leaf": {
            "states": {"work": {"emits": ["fin"]}},
            "events": {"fin": {}},
            "transitions": [
                {"from": "__start__", "to": "work"},
                {"from": "work", "to": "__end__", "on": "fin"},
            ],
        },
    },
    "schemas": {},
}


def test_nesting_moves_up_the_family_in_one_transaction(store: Store, clock: FakeClock) -> None:
    engine = engine_for(store, clock, NESTED)
    engine.start("N", {})
    mid, leaf = "N.fan.1.mid", "N.fan.1.mid.inner.1.leaf"
    assert engine.children("N") == [mid] and engine.children(mid) == [leaf]
    assert engine.rows("N")[-2:] == [
        ("entered", {"state": "fan", "visit": 1}),
        ("branch_started", {"workflow": "mid", "token": mid}),
    ]
    engine.pause("N")
    assert [engine.token(t)["status"] for t in ("N", mid, leaf)] == ["paused"] * 3
    engine.resume("N")
    grant = engine.claim("box", ["leaf/work"])
    assert grant is not None and grant["token"] == leaf
    clock.advance(3)
    engine.done(1, "fin")
    assert [engine.token(t)["status"] for t in ("N", mid, leaf)] == ["completed"] * 3
    assert {r[1] for t in ("N", mid, leaf) for r in engine.full_rows(t)[-1:]} == {at(3)}
    mid_joined = engine.rows(mid)[-2]
    assert (
        mid_joined[0] == "event_accepted"
        and mid_joined[1]["payload"]["branches"][0]["token"] == leaf
    )


def test_cancel_reaches_every_level(store: Store, clock: FakeClock) -> None:
    engine = engine_for(store, clock, NESTED)
    engine.start("N", {})
    engine.cancel("N")
    assert engine.rows("N.fan.1.mid")[-1] == ("cancelled", {"reason": "the parent was cancelled"})
    assert engine.rows("N.fan.1.mid.inner.1.leaf")[-2:] == [
        ("task_cancelled", {"task": 1}),
        ("cancelled", {"reason": "the parent was cancelled"}),
    ]
    assert engine.rows("N")[-1] == ("cancelled", {})


def test_a_start_into_a_parallel_state_checks_the_children_first(
    store: Store, clock: FakeClock
) -> None:
    engine = engine_for(store, clock, NESTED)
    top = "N" * 113  # + ".fan.1.mid" fits (123); + ".inner.1.leaf" does not (136)
    leaf = f"{top}.fan.1.mid.inner.1.leaf"
    sentence = (
        f"the child 'mid' of 'fan' cannot start: the child {leaf!r} of 'inner' would have an "
        "id longer than 128 characters; use a shorter token id"
    )
    assert refusal(engine.start, top, {}) == (422, "invalid_context", sentence)
    assert engine.query("SELECT count(*) FROM tokens") == [(0,)]


def test_arrival_numbers_restart_after_each_pause(store: Store, clock: FakeClock) -> None:
    """Arrival numbers: only events held now count, not those a member replayed before it ended."""
    engine = engine_for(store, clock, dev())
    into_reviews(engine)
    engine.pause("TICKET-1")
    engine.fire(DES, "seen")
    engine.resume("TICKET-1")
    assert engine.token(DES)["status"] == "completed"
    engine.pause("TICKET-1")
    engine.fire(SEC, "fin")
    engine.fire("TICKET-1", "merged")
    assert engine.rows(SEC)[-1] == (
        "event_deferred",
        {"event": "fin", "payload": None, "arrival": 1},
    )
    assert engine.rows("TICKET-1")[-1] == (
        "event_deferred", {"event": "merged", "payload": None, "arrival": 2},
    )  # fmt: skip
