"""Schedules' fields and slots: the checks naming the part, the slots in a zone
with daylight-saving time, and what each `catch_up` starts after downtime."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from stateous.model.schedules import (
    ON_TIME,
    SLOTS_A_STEP,
    Plan,
    ScheduleProblem,
    ScheduleSpec,
    check_spec,
    due_slots,
    next_slot,
    plan,
    upcoming,
)

PARIS = "Europe/Paris"


def spec(cron: str, tz: str = "UTC", catch_up: str = "last", **more: Any) -> ScheduleSpec:
    return ScheduleSpec(name="nightly", cron=cron, tz=tz, catch_up=catch_up, **more)


def problem(body: dict[str, Any], name: str | None = None) -> str:
    with pytest.raises(ScheduleProblem) as caught:
        check_spec(body, name)
    return str(caught.value)


def test_a_body_gets_the_defaults() -> None:
    assert check_spec({"name": "nightly", "cron": "0  9 * * 1-5"}) == ScheduleSpec(
        name="nightly", cron="0 9 * * 1-5", tz="UTC", context=None, id="{name}-{at}",
        catch_up="last", paused=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"name": "Nightly", "cron": "0 9 * * *"}, "'name' is 1 to 64 lower-case letters"),
        ({"name": "a" * 65, "cron": "0 9 * * *"}, "'name' is 1 to 64 lower-case letters"),
        ({"name": "n"}, "a schedule needs 'cron'"),
        ({"name": "n", "cron": "0 0 9 * * *"}, "'cron' has 6 fields; a schedule's cron"),
        ({"name": "n", "cron": "@daily"}, "'cron' has 1 field; a schedule's cron"),
        ({"name": "n", "cron": "61 9 * * *"}, "'cron' cannot be read: Bad minute"),
        ({"name": "n", "cron": "0 0 30 2 *"}, "'cron' cannot be read: Bad day-of-month"),
        ({"name": "n", "cron": 5}, "'cron' is a cron expression of 5 fields"),
        ({"name": "n", "cron": "* * * * *", "tz": "Mars/Olympus"}, "'tz' 'Mars/Olympus' is no"),
        ({"name": "n", "cron": "* * * * *", "tz": "../etc/passwd"}, "'tz' '../etc/passwd' is no"),
        ({"name": "n", "cron": "* * * * *", "tz": ""}, "'tz' is an IANA time zone"),
        ({"name": "n", "cron": "* * * * *", "id": "{name}"}, "'id' has no {at}"),
        ({"name": "n", "cron": "* * * * *", "id": "x {at}"}, "'id' makes the token id 'x 2026"),
        ({"name": "n", "cron": "* * * * *", "id": "{who}{at}"}, "'id' makes the token id '{who}"),
        ({"name": "n", "cron": "* * * * *", "id": "_{at}"}, "'id' makes the token id '_2026"),
        ({"name": "n", "cron": "* * * * *", "id": "x" * 116 + "{at}"}, "'id' makes the token"),
        ({"name": "n", "cron": "* * * * *", "catch_up": "some"}, "'catch_up' is one of none,"),
        ({"name": "n", "cron": "* * * * *", "paused": "no"}, "'paused' is true or false"),
        ({"name": "n", "cron": "* * * * *", "context": []}, "'context' is a JSON object"),
        ({"name": "n", "cron": "* * * * *", "every": 1}, "a schedule has no part 'every'"),
    ],
)
def test_a_bad_part_is_named(body: dict[str, Any], said: str) -> None:
    assert problem(body).startswith(said)


def test_the_path_names_the_schedule() -> None:
    assert check_spec({"cron": "* * * * *"}, "n").name == "n"
    assert problem({"name": "m", "cron": "* * * * *"}, "n") == (
        "'name' is 'm', but the path names the schedule 'n'"
    )


def test_the_token_id_is_the_slot_in_the_zone() -> None:
    paris = spec("0 9 * * *", PARIS, id="report.{name}.{at}")
    assert paris.token_id(datetime(2026, 10, 16, 7, 0)) == "report.nightly.20261016T0900"
    assert spec("0 9 * * *").token_id(datetime(2026, 10, 16, 9, 0)) == "nightly-20261016T0900"


def test_slots_are_wall_clock_times_of_the_zone() -> None:
    assert upcoming(spec("0 9 * * 1-5", PARIS), datetime(2026, 10, 16, 7, 0), 3) == [
        datetime(2026, 10, 19, 7, 0),  # Monday: Friday's 09:00 is not after itself
        datetime(2026, 10, 20, 7, 0),
        datetime(2026, 10, 21, 7, 0),
    ]


def test_a_slot_in_the_spring_gap_is_skipped() -> None:
    # 2026-03-29 in Paris: 02:00 CET becomes 03:00 CEST, so 02:30 does not exist that day.
    daily = spec("30 2 * * *", PARIS)
    assert upcoming(daily, datetime(2026, 3, 27, 12, 0), 3) == [
        datetime(2026, 3, 28, 1, 30),
        datetime(2026, 3, 30, 0, 30),
        datetime(2026, 3, 31, 0, 30),
    ]
    # The minutes around the gap keep their slots: 01:59 CET and 03:00 CEST.
    assert upcoming(spec("0,59 1,3 29 3 *", PARIS), datetime(2026, 3, 28, 23, 30), 4) == [
        datetime(2026, 3, 29, 0, 0), datetime(2026, 3, 29, 0, 59),
        datetime(2026, 3, 29, 1, 0), datetime(2026, 3, 29, 1, 59),
    ]  # fmt: skip


def test_a_repeated_hour_runs_once() -> None:
    # 2026-10-25 in Paris: 03:00 CEST becomes 02:00 CET; 02:00-02:59 happens twice.
    every_20 = spec("*/20 * * * *", PARIS)
    slots = upcoming(every_20, datetime(2026, 10, 24, 23, 50), 7)
    assert [every_20.token_id(slot) for slot in slots] == [
        "nightly-20261025T0200", "nightly-20261025T0220", "nightly-20261025T0240",
        "nightly-20261025T0300", "nightly-20261025T0320", "nightly-20261025T0340",
        "nightly-20261025T0400",
    ]  # fmt: skip
    # The first occurrence (CEST, 00:xx UTC); the second hour (01:xx UTC) has no slot.
    assert slots[:4] == [
        datetime(2026, 10, 25, 0, 0), datetime(2026, 10, 25, 0, 20),
        datetime(2026, 10, 25, 0, 40), datetime(2026, 10, 25, 2, 0),
    ]  # fmt: skip
    # From inside the second occurrence, the next slot is 03:00 CET, and the due slots of the
    # night are the first occurrence's.
    assert next_slot(every_20, datetime(2026, 10, 25, 1, 10)) == datetime(2026, 10, 25, 2, 0)
    assert due_slots(every_20, datetime(2026, 10, 24, 23, 50), datetime(2026, 10, 25, 1, 50), 9) == [
        datetime(2026, 10, 25, 0, 40), datetime(2026, 10, 25, 0, 20), datetime(2026, 10, 25, 0, 0),
    ]  # fmt: skip


HOURLY = "0 * * * *"
T0 = datetime(2026, 10, 16, 9, 0)


def test_nothing_is_due_before_next_at() -> None:
    assert plan(spec(HOURLY), T0, T0 - timedelta(microseconds=1)) is None


def test_an_on_time_slot_starts_whatever_catch_up_says() -> None:
    late = T0 + timedelta(seconds=1)
    for catch_up in ("none", "last", "all"):
        assert plan(spec(HOURLY, catch_up=catch_up), T0, late) == Plan(
            (T0,), datetime(2026, 10, 16, 10, 0)
        )


def test_after_downtime_each_catch_up() -> None:
    now = T0 + timedelta(hours=4, minutes=30)  # 09:00 to 13:00 missed
    after = datetime(2026, 10, 16, 14, 0)
    assert plan(spec(HOURLY, catch_up="none"), T0, now) == Plan((), after)
    assert plan(spec(HOURLY, catch_up="last"), T0, now) == Plan((T0 + timedelta(hours=4),), after)
    # `all`: each, oldest first.
    hours = tuple(T0 + timedelta(hours=n) for n in range(5))
    assert plan(spec(HOURLY, catch_up="all"), T0, now) == Plan(hours, after)


def test_none_starts_the_newest_slot_while_it_is_on_time() -> None:
    now = T0 + timedelta(hours=4) + ON_TIME
    assert plan(spec(HOURLY, catch_up="none"), T0, now) == Plan(
        (T0 + timedelta(hours=4),), datetime(2026, 10, 16, 14, 0)
    )


def test_all_catches_up_the_newest_thousand_fifty_a_step() -> None:
    minutely = spec("* * * * *", catch_up="all")
    now = T0 + timedelta(minutes=1500)
    oldest = now - timedelta(minutes=999)
    first = plan(minutely, T0, now)
    assert first == Plan(
        tuple(oldest + timedelta(minutes=n) for n in range(SLOTS_A_STEP)),
        oldest + timedelta(minutes=SLOTS_A_STEP),
    )
    assert len(due_slots(minutely, T0, now, 1000)) == 1000
    # The last step of the thousand ends at now; the next slot is after it.
    last = plan(minutely, now - timedelta(minutes=9), now)
    assert last is not None and len(last.slots) == 10
    assert last.next_at == now + timedelta(minutes=1)


def test_all_starts_from_the_first_slot_at_or_after_next_at() -> None:
    # next_at between slots (the cron expression was replaced): the first slot after it.
    found = plan(spec(HOURLY, catch_up="all"), T0 + timedelta(minutes=5), T0 + timedelta(hours=1))
    assert found == Plan((T0 + timedelta(hours=1),), T0 + timedelta(hours=2))
    assert plan(
        spec(HOURLY, catch_up="all"), T0 + timedelta(minutes=5), T0 + timedelta(minutes=6)
    ) == (Plan((), T0 + timedelta(hours=1)))
