"""The console's `s` screen against the real API (SQLite, a fake clock): the
schedules with their next run, last token and last slot that failed (and the error of the one
under the cursor, until a later slot fixes it), `p`/`r` to pause and resume (with the console's
`by` in the audit), `S` from the tokens screen where `s` starts a token, and a read-only
console's keys doing nothing. Pilot tests and one SVG snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from stateous.control.clock import FakeClock
from stateous.control.ticker import Ticker
from stateous.model.auth import Grant
from stateous.tui.screens.schedules import SchedulesScreen
from stateous.tui.screens.start import StartScreen
from tests.integration.control.test_schedule_routes import OWNER, serve_newer
from tests.integration.tui.test_console_ops import Scene, settle
from tests.support import sqlite_url
from tests.support.app import running_api
from tests.support.graphs import ORDERS
from tests.unit.tui.helpers import notes, plain, wait_for

Snap = Callable[..., bool]


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    """`hourly` (its 21:00 slot started) and `nightly`, paused, on ORDERS at 20:48:44."""
    monkeypatch.setenv("STATEOUS_ACTOR", "alice")
    clock = FakeClock()
    with running_api(sqlite_url(tmp_path), ORDERS, clock) as api:
        scene = Scene(api, clock)
        scene.post("/schedules", {"name": "hourly", "cron": "0 * * * *", "context": {"title": "h"}})
        scene.post("/schedules", {"name": "nightly", "cron": "30 2 * * *", "tz": "Europe/Paris",
                                  "context": {"title": "n"}, "paused": True})  # fmt: skip
        clock.advance(12 * 60)  # 21:00:44
        Ticker(api.plane).tick()
        yield scene
        scene.http.close()


@pytest.fixture
def failed(scene: Scene) -> Scene:
    """The scene, then a version whose model needs an `owner`: `hourly`'s 22:00 slot fails."""
    serve_newer(scene.api, scene.clock)
    scene.clock.advance(3600)  # 22:00:44
    Ticker(scene.api.plane).tick()
    return scene


async def open_schedules(pilot: Pilot[Any], key: str = "s") -> DataTable[Any]:
    """`s` from the outboxes screen (on the tokens screen `s` starts a token), `S` from the
    tokens screen."""
    await settle(pilot)
    if key == "s":
        await pilot.press("o")
        await settle(pilot)
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, SchedulesScreen))
    await settle(pilot)
    return pilot.app.screen.query_one("#schedules", DataTable)


def rows(table: DataTable[Any]) -> list[list[str]]:
    return [plain(table.get_row(str(row.value))) for row in table.rows]


async def test_s_lists_the_schedules_with_next_run_and_last_token(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 24)) as pilot:
        table = await open_schedules(pilot, "S")
        assert rows(table) == [
            ["hourly", "0 * * * *", "10-16 22:00", "10-16 21:00", "-"],
            ["nightly paused", "30 2 * * *", "-", "-", "-"],
        ]
        assert error(pilot) == "hourly: in UTC, last token hourly-20261016T2100; no slot failed"
        await pilot.press("down")
        await settle(pilot)
        assert error(pilot) == "nightly: in Europe/Paris, last token -; no slot failed"


def error(pilot: Pilot[Any]) -> str:
    """The line under the table: the last error of the schedule under the cursor."""
    return str(pilot.app.screen.query_one("#schedule-error", Static).render())


async def test_a_slot_that_failed_is_shown_until_a_later_one_starts(failed: Scene) -> None:
    app = failed.console()
    async with app.run_test(size=(130, 24)) as pilot:
        table = await open_schedules(pilot, "S")
        assert rows(table)[0][2:] == ["10-16 23:00", "10-16 21:00", "10-16 22:00"]
        assert error(pilot) == (
            "hourly: in UTC, last token hourly-20261016T2100; 1 slot failed; the last, "
            f"2026-10-16 22:00:00: the token 'hourly-20261016T2200' did not start: {OWNER}"
        )
        await pilot.press("down")
        await settle(pilot)
        assert error(pilot) == "nightly: in Europe/Paris, last token -; no slot failed"
        fixed = {"cron": "0 * * * *", "context": {"title": "h", "owner": "ops"}}
        assert failed.http.put("/schedules/hourly", json=fixed).status_code == 200
        failed.clock.advance(3600)  # 23:00:44: the slot of 23:00 starts
        Ticker(failed.api.plane).tick()
        await pilot.press("up")
        screen = pilot.app.screen
        assert isinstance(screen, SchedulesScreen)
        screen.refresh_now()
        await wait_for(pilot, lambda: rows(table)[0][3] == "10-16 23:00")
        assert rows(table)[0][4] == "10-16 22:00 fixed"
        assert error(pilot) == (
            "hourly: in UTC, last token hourly-20261016T2300; 1 slot failed; the last, "
            "2026-10-16 22:00:00 (fixed: a later slot started): the token "
            f"'hourly-20261016T2200' did not start: {OWNER}"
        )


async def test_p_and_r_pause_and_resume_the_schedule_under_the_cursor(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 24)) as pilot:
        table = await open_schedules(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert rows(table)[0][:3] == ["hourly paused", "0 * * * *", "-"]
        assert scene.http.get("/schedules/hourly").json()["paused"] is True
        await pilot.press("down", "r")
        await settle(pilot)
        assert rows(table)[1][:3] == ["nightly", "30 2 * * *", "10-17 00:30"]
    acts = [(a["token"], a["kind"], a["actor"], a["via"]) for a in scene.http.get("/audit").json()]
    assert acts == [
        ("schedule:nightly", "schedule_resumed", "alice", "console"),
        ("schedule:hourly", "schedule_paused", "alice", "console"),
    ]


async def test_s_on_the_tokens_screen_still_starts_a_token(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, StartScreen))


async def test_without_schedules_the_screen_says_how_to_make_one(tmp_path: Path) -> None:
    with running_api(sqlite_url(tmp_path), ORDERS, FakeClock()) as api:
        scene = Scene(api, FakeClock())
        app = scene.console()
        async with app.run_test(size=(130, 24)) as pilot:
            table = await open_schedules(pilot, "S")
            assert rows(table) == []
            hint = str(app.screen.query_one("#schedules-hint", Static).render())
            assert hint == "No schedule: stateous schedule add NAME --cron '0 9 * * 1-5' makes one."
        scene.http.close()


def test_snapshot_schedules_screen(snap_compare: Snap, failed: Scene) -> None:
    async def schedules(pilot: Pilot[Any]) -> None:
        await open_schedules(pilot, "S")

    assert snap_compare(failed.console(), terminal_size=(130, 16), run_before=schedules)


async def test_a_read_only_console_lists_the_schedules_and_p_says_it_may_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATEOUS_AUTH_TOKEN", "viewer-token")
    grants = {"viewer-token": Grant("viewer", "read"), "boss-token": Grant("boss", "admin")}
    boss = {"Authorization": "Bearer boss-token"}
    clock = FakeClock()
    with running_api(sqlite_url(tmp_path), ORDERS, clock, auth_grants=grants) as api:
        body = {"name": "hourly", "cron": "0 * * * *", "context": {"title": "h"}}
        assert httpx.post(f"{api.url}/schedules", json=body, headers=boss).status_code == 201
        app = Scene(api, clock).console()
        async with app.run_test(size=(130, 24)) as pilot:
            table = await open_schedules(pilot, "S")
            await pilot.press("p")
            await settle(pilot)
            assert rows(table)[0][0] == "hourly"
            # No request was sent (no 403 refusal): the console says which role p needs.
            assert notes(pilot) == [
                "Pause needs the operate or admin role: this console's token has read"
            ]
        shown = httpx.get(f"{api.url}/schedules/hourly", headers=boss).json()
        assert shown["paused"] is False
        acts = httpx.get(f"{api.url}/audit", headers=boss).json()
        assert [(a["kind"], a["actor"]) for a in acts] == [("schedule_added", "boss")]
