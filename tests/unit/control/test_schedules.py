"""Schedules on the clock, on SQLite and Postgres with a fake clock: the token of
each due slot started once, by `catch_up` after downtime, across daylight-saving changes, by
two clocks on one database, and the operator's acts with their audit rows."""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any

import pytest

from stateous.control.clock import FakeClock
from stateous.control.engine import schedules
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import Refusal
from stateous.control.plane import Plane
from stateous.control.store.db import Store, make_engine
from stateous.control.store.figures import read_figures
from stateous.control.ticker import Ticker
from stateous.model.graph import load_graph
from stateous.model.schedules import error_fixed
from tests.support.graphs import ORDERS, graph_text, variant
from tests.unit.control.harness import Engine, refusal

T0 = datetime(2026, 10, 16, 8, 59, 30)
NINE = datetime(2026, 10, 16, 9, 0)
TITLE = {"title": "the nightly report"}


@pytest.fixture
def engine(store: Store, clock: FakeClock, orders: EngineConfig) -> Engine:
    clock.set(T0)
    return Engine(store, clock, orders)


def add(engine: Engine, body: dict[str, Any], by: dict[str, Any] | None = None) -> dict[str, Any]:
    with engine.store.begin() as conn:
        return schedules.create(conn, engine.clock, engine.config, schedules.check_body(body), by)


def replace(engine: Engine, body: dict[str, Any], name: str = "hourly") -> dict[str, Any]:
    with engine.store.begin() as conn:
        spec = schedules.check_body(body, name)
        return schedules.replace(conn, engine.clock, engine.config, spec, None)


def hourly(catch_up: str = "last", **more: Any) -> dict[str, Any]:
    return {"name": "hourly", "cron": "0 * * * *", "context": TITLE, "catch_up": catch_up, **more}


def shown(engine: Engine, name: str = "hourly") -> dict[str, Any]:
    with engine.store.begin() as conn:
        return schedules.get_wire(conn, name)


def started(engine: Engine) -> list[str]:
    """The ids of every token, in the order they started."""
    rows = engine.query("SELECT token FROM ledger WHERE kind = 'started' ORDER BY at, token")
    return [str(row[0]) for row in rows]


def test_the_slot_s_token_starts_on_the_first_tick_after_it(engine: Engine) -> None:
    made = add(engine, hourly())
    assert made == {
        "name": "hourly", "cron": "0 * * * *", "tz": "UTC", "context": TITLE,
        "id": "{name}-{at}", "catch_up": "last", "paused": False,
        "next_at": "2026-10-16T09:00:00Z", "last_at": None, "last_token": None,
        "last_error": None, "last_error_at": None, "failures": 0,
    }  # fmt: skip
    assert engine.tick(29).schedules == 0  # 08:59:59
    assert started(engine) == []
    assert engine.tick(1).schedules == 1  # 09:00:00
    assert started(engine) == ["hourly-20261016T0900"]
    kind, data = engine.rows("hourly-20261016T0900")[0]
    assert kind == "started"
    assert list(data.items()) == [
        ("context", {"title": "the nightly report", "verdict": None}),
        ("schedule", "hourly"),
    ]
    assert engine.token("hourly-20261016T0900")["state"] == "draft"
    after = shown(engine)
    assert (after["next_at"], after["last_at"], after["last_token"]) == (
        "2026-10-16T10:00:00Z", "2026-10-16T09:00:00Z", "hourly-20261016T0900",
    )  # fmt: skip
    assert engine.tick(1).schedules == 0
    assert started(engine) == ["hourly-20261016T0900"]


@pytest.mark.parametrize(
    ("catch_up", "tokens"),
    [
        ("none", []),
        ("last", ["hourly-20261016T1300"]),
        ("all", [f"hourly-20261016T{hour}00" for hour in ("09", "10", "11", "12", "13")]),
    ],
)
def test_after_downtime_catch_up_decides(engine: Engine, catch_up: str, tokens: list[str]) -> None:
    add(engine, hourly(catch_up))
    engine.clock.set(datetime(2026, 10, 16, 13, 30))  # down from 08:59:30 to 13:30
    engine.tick()
    assert started(engine) == tokens
    assert shown(engine)["next_at"] == "2026-10-16T14:00:00Z"
    engine.tick(1)
    assert started(engine) == tokens


def test_a_slot_whose_token_exists_counts_as_done(engine: Engine) -> None:
    add(engine, hourly())
    engine.clock.set(NINE)
    engine.start("hourly-20261016T0900", {"title": "by hand"})
    engine.tick()
    assert started(engine) == ["hourly-20261016T0900"]
    assert engine.rows("hourly-20261016T0900")[0][1] == {
        "context": {"title": "by hand", "verdict": None}
    }
    assert (shown(engine)["next_at"], shown(engine)["last_token"]) == (
        "2026-10-16T10:00:00Z", "hourly-20261016T0900",
    )  # fmt: skip


def needing_an_owner() -> EngineConfig:
    """ORDERS, then a version whose model needs an `owner` as well, served meanwhile."""
    newer = variant(ORDERS)
    newer["schemas"]["Item"]["properties"]["owner"] = {"type": "string"}
    newer["schemas"]["Item"]["required"].append("owner")
    config = EngineConfig(load_graph(graph_text(ORDERS)))
    config.versions.make_current(load_graph(graph_text(newer)))
    return config


REFUSED = (
    "'context' cannot start a token of the version served now (orders: Item: 'title' is a "
    "required property)"
)


def test_a_context_the_version_refuses_is_not_saved(engine: Engine) -> None:
    assert refusal(add, engine, {"name": "bare", "cron": "0 * * * *"}, {"actor": "alice"}) == (
        422, "invalid_body", REFUSED,
    )  # fmt: skip
    assert refusal(add, engine, {**hourly(), "context": {"title": 5}}) == (
        422, "invalid_body",
        "'context' cannot start a token of the version served now (orders: title: 5 is not of "
        "type 'string')",
    )  # fmt: skip
    add(engine, hourly())
    assert refusal(replace, engine, {"cron": "15 9 * * *"}) == (422, "invalid_body", REFUSED)
    assert (shown(engine)["cron"], shown(engine)["context"]) == ("0 * * * *", TITLE)
    assert engine.query("SELECT name, cron FROM schedules") == [("hourly", "0 * * * *")]
    assert engine.query("SELECT kind FROM audit") == []


def test_a_slot_that_cannot_start_is_skipped_logged_and_kept(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    add(engine, hourly("all"))
    engine.config = needing_an_owner()
    engine.clock.set(datetime(2026, 10, 16, 10, 0, 30))  # 09:00 and 10:00 are due
    with caplog.at_level(logging.WARNING, "stateous.serve"):
        result = engine.tick()
    assert (result.schedules, result.failures) == (1, 0)
    assert started(engine) == []
    problem = "orders: Item: 'owner' is a required property"
    assert caplog.messages == [
        f"the schedule 'hourly' did not start the token 'hourly-20261016T{at}' ({problem}); "
        "its slot is skipped"
        for at in ("0900", "1000")
    ]
    after = shown(engine)
    assert {k: after[k] for k in ("next_at", "last_token", "last_error", "last_error_at")} == {
        "next_at": "2026-10-16T11:00:00Z", "last_token": None,
        "last_error": f"the token 'hourly-20261016T1000' did not start: {problem}",
        "last_error_at": "2026-10-16T10:00:00Z",
    }  # fmt: skip
    assert after["failures"] == 2
    with engine.store.begin() as conn:
        assert read_figures(conn).schedule_failures == {"hourly": 2}


def test_a_slot_that_starts_after_a_failure_keeps_the_error_on_record(engine: Engine) -> None:
    add(engine, hourly())
    engine.config = needing_an_owner()
    engine.clock.set(datetime(2026, 10, 16, 9, 0, 30))
    engine.tick()
    assert refusal(replace, engine, hourly())[:2] == (422, "invalid_body")
    replace(engine, {**hourly(), "context": {**TITLE, "owner": "ops"}})
    engine.clock.set(datetime(2026, 10, 16, 10, 0, 30))
    engine.tick()
    assert started(engine) == ["hourly-20261016T1000"]
    after = shown(engine)
    assert {k: after[k] for k in ("last_at", "last_token", "last_error_at", "failures")} == {
        "last_at": "2026-10-16T10:00:00Z", "last_token": "hourly-20261016T1000",
        "last_error_at": "2026-10-16T09:00:00Z", "failures": 1,
    }  # fmt: skip
    assert after["last_error"] == (
        "the token 'hourly-20261016T0900' did not start: orders: Item: 'owner' is a required "
        "property"
    )
    assert error_fixed(after) is True


def test_a_paused_schedule_starts_nothing_and_resumes_from_now(engine: Engine) -> None:
    add(engine, hourly("all"))
    with engine.store.begin() as conn:
        paused = schedules.pause(conn, engine.clock, "hourly", None)
    assert (paused["paused"], paused["next_at"]) == (True, None)
    engine.clock.set(datetime(2026, 10, 16, 11, 10))
    engine.tick()
    assert started(engine) == []
    with engine.store.begin() as conn:
        resumed = schedules.resume(conn, engine.clock, "hourly", None)
    assert (resumed["paused"], resumed["next_at"]) == (False, "2026-10-16T12:00:00Z")
    engine.tick(3600)
    assert started(engine) == ["hourly-20261016T1200"]


def test_the_repeated_hour_runs_once_and_the_gap_not_at_all(engine: Engine) -> None:
    engine.clock.set(datetime(2026, 10, 24, 23, 0))
    add(engine, {"name": "paris", "cron": "30 * * * *", "tz": "Europe/Paris", "context": TITLE})
    while engine.clock.now() < datetime(2026, 10, 25, 3, 0):
        engine.tick(60)
    # 01:30 and 02:30 CEST, then 03:30 CET: 02:30 CET (01:30 UTC) is the same wall-clock time.
    assert started(engine) == [
        "paris-20261025T0130", "paris-20261025T0230", "paris-20261025T0330",
    ]  # fmt: skip
    engine.clock.set(datetime(2027, 3, 27, 12, 0))  # 2027-03-28 02:30 does not exist in Paris
    replace(engine, {"cron": "30 2 * * *", "tz": "Europe/Paris", "context": TITLE}, "paris")
    for _ in range(3):
        engine.tick(24 * 3600)
    assert started(engine)[3:] == ["paris-20270329T0230", "paris-20270330T0230"]


def test_two_clocks_on_one_database_start_each_slot_once(
    migrated_db_url: str, clock: FakeClock, orders: EngineConfig
) -> None:
    clock.set(T0)
    stores = [Store(make_engine(migrated_db_url)) for _ in range(2)]
    tickers = [Ticker(Plane(store, orders, clock)) for store in stores]
    engine = Engine(stores[0], clock, orders)
    add(engine, {**hourly("all"), "cron": "*/5 * * * *"})
    clock.set(datetime(2026, 10, 16, 10, 0))  # 13 slots due: 09:00 to 10:00
    failures: list[int] = []

    def tick(ticker: Ticker) -> None:
        failures.append(ticker.tick().failures)

    threads = [threading.Thread(target=tick, args=(ticker,)) for ticker in tickers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # A restart: a new clock on the same database finds nothing more to do.
    Ticker(Plane(stores[1], orders, clock)).tick()
    tokens = started(engine)
    assert sorted(tokens) == [f"hourly-20261016T{t}" for t in (
        "0900", "0905", "0910", "0915", "0920", "0925", "0930", "0935", "0940", "0945", "0950",
        "0955", "1000",
    )]  # fmt: skip
    assert failures == [0, 0]
    assert shown(engine)["next_at"] == "2026-10-16T10:05:00Z"
    for store in stores:
        store.engine.dispose()


def test_the_operator_s_acts_and_their_refusals(engine: Engine) -> None:
    alice = {"actor": "alice", "via": "cli", "reason": "month end"}
    add(engine, hourly(), alice)
    assert refusal(add, engine, hourly()) == (
        409, "schedule_exists",
        "a schedule 'hourly' exists already; PUT /schedules/hourly replaces it",
    )  # fmt: skip
    replaced = replace(engine, {"cron": "15 9 * * *", "context": {"title": "t"}})
    assert (replaced["cron"], replaced["next_at"], replaced["context"]) == (
        "15 9 * * *", "2026-10-16T09:15:00Z", {"title": "t"},
    )  # fmt: skip
    with engine.store.begin() as conn:
        for act in (schedules.pause, schedules.resume, schedules.remove):
            act(conn, engine.clock, "hourly", {"actor": "bob"})
        for act in (schedules.pause, schedules.resume, schedules.remove):
            assert refusal(act, conn, engine.clock, "nope", None) == (
                404,
                "schedule_not_found",
                "there is no schedule 'nope'",
            )
        assert refusal(schedules.get_wire, conn, "hourly")[1] == "schedule_not_found"
        assert schedules.list_wire(conn) == []
    assert engine.query("SELECT token, seq, kind, actor, via, reason FROM audit ORDER BY seq") == [
        ("schedule:hourly", 1, "schedule_added", "alice", "cli", "month end"),
        ("schedule:hourly", 2, "schedule_paused", "bob", None, None),
        ("schedule:hourly", 3, "schedule_resumed", "bob", None, None),
        ("schedule:hourly", 4, "schedule_removed", "bob", None, None),
    ]
    assert refusal(schedules.check_body, {"name": "x", "cron": "0 0 9 * * *"})[:2] == (
        422, "invalid_body",
    )  # fmt: skip


def test_a_long_catch_up_goes_on_at_the_next_tick(engine: Engine) -> None:
    add(engine, {**hourly("all"), "cron": "* * * * *"})
    engine.clock.set(datetime(2026, 10, 16, 13, 59, 30))  # 300 slots: 09:00 to 13:59
    engine.tick()
    # Four steps of 50 slots a tick, each step one transaction with its next_at.
    assert len(started(engine)) == 200
    assert shown(engine)["next_at"] == "2026-10-16T12:20:00Z"
    engine.tick()
    tokens = started(engine)
    assert len(tokens) == len(set(tokens)) == 300
    assert (tokens[0], tokens[-1]) == ("hourly-20261016T0900", "hourly-20261016T1359")
    assert shown(engine)["next_at"] == "2026-10-16T14:00:00Z"


def test_tokens_start_on_the_version_current_at_their_slot(store: Store, clock: FakeClock) -> None:
    older = variant(ORDERS)
    older["events"]["withdrawn"] = {}
    older["states"]["draft"]["emits"].append("withdrawn")
    older["transitions"].append({"from": "draft", "to": "__end__", "on": "withdrawn"})
    old_graph, new_graph = load_graph(graph_text(older)), load_graph(graph_text(ORDERS))
    clock.set(T0)
    engine = Engine(store, clock, EngineConfig(old_graph))
    add(engine, hourly())
    engine.config.versions.make_current(new_graph)  # served meanwhile
    engine.tick(30)
    assert engine.token("hourly-20261016T0900")["structure"] == new_graph.structure
    assert old_graph.structure != new_graph.structure


def test_two_saves_of_one_new_name_take_turns(engine: Engine) -> None:
    outcomes: list[str] = []
    ready = threading.Barrier(2)

    def save() -> None:
        ready.wait()
        try:
            add(engine, hourly())
            outcomes.append("made")
        except Refusal as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=save) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["made", "schedule_exists"]
