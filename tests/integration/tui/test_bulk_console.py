"""The console's bulk actions and `by` against the real API (SQLite, a fake clock):
`*` selects every token of the filter, `p` `r` `c` `f` confirm with the count and a reason, the
status bar follows the job, `b` lists the jobs; Pilot tests and SVG snapshots."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, DataTable, Input, Label

from stateous.control.bulk_runner import BulkRunner
from stateous.control.clock import FakeClock
from stateous.tui.app import ConsoleApp
from stateous.tui.screens.bulk import BulkConfirmScreen
from stateous.tui.screens.confirm import ConfirmScreen
from stateous.tui.widgets import StatusBar
from tests.integration.tui.test_console_ops import Scene, settle, utc  # noqa: F401  # fixture
from tests.support import sqlite_url
from tests.support.app import running_api
from tests.support.graphs import ORDERS
from tests.unit.tui.helpers import notes, plain, wait_for

Snap = Callable[..., bool]
CONSOLE_BY = {"actor": "alice", "via": "console"}


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    """Four orders in draft (ORDER-4 paused) on a fake clock; the console acts as alice."""
    monkeypatch.setenv("STATEOUS_ACTOR", "alice")
    clock = FakeClock()
    with running_api(sqlite_url(tmp_path), ORDERS, clock) as api:
        scene = Scene(api, clock)
        for number in (1, 2, 3, 4):
            scene.post("/tokens", {"token": f"ORDER-{number}", "context": {"title": "t"}})
        scene.post("/tokens/ORDER-4/pause", {})
        clock.advance(5)
        yield scene
        scene.http.close()


def header(app: ConsoleApp) -> str:
    return str(app.screen.query_one(StatusBar).render())


def acts(scene: Scene, token: str) -> list[tuple[str, Any]]:
    rows = scene.http.get(f"/tokens/{token}/history").json()
    return [(r["kind"], r["data"]["by"]) for r in rows if "by" in r["data"]]


async def select_and_ask(pilot: Pilot[Any], *keys: str) -> BulkConfirmScreen:
    await settle(pilot)
    await pilot.press(*keys)
    # The bulk worker waits for the answer: wait for the dialog, not for every worker.
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, BulkConfirmScreen))
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, BulkConfirmScreen)
    return screen


async def answer_yes(pilot: Pilot[Any], confirm: BulkConfirmScreen) -> None:
    confirm.query_one("#yes", Button).press()
    await wait_for(pilot, lambda: pilot.app.screen is not confirm)
    await settle(pilot)


async def test_star_then_c_cancels_every_token_of_the_filter_with_a_reason(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        confirm = await select_and_ask(pilot, "1", "asterisk", "c")  # active only, all, cancel
        question = str(confirm.query_one("#question", Label).render())
        assert question == (
            "cancel 3 tokens?\nevery token where status active\nORDER-1, ORDER-2, ORDER-3\n"
            "One bulk job acts on each, and goes on if the console closes."
        )
        await pilot.press("tab", *"the vendor is down")  # No has the focus; tab: the reason
        await answer_yes(pilot, confirm)
        job = scene.http.get("/bulk/1").json()
        assert (job["action"], job["filter"], job["matched"]) == (
            "cancel",
            {"status": ["active"]},
            3,
        )
        assert job["by"] == {"actor": "alice", "reason": "the vendor is down", "via": "console"}
        BulkRunner(scene.api.plane).drain()
        app.poll_plane()
        await settle(pilot)
        await wait_for(pilot, lambda: "bulk 1 cancel 3/3 finished" in header(app))
    assert acts(scene, "ORDER-2") == [("cancelled", {**job["by"], "bulk": 1})]
    assert scene.http.get("/tokens/ORDER-4").json()["status"] == "paused"


async def test_no_leaves_everything_as_it_was(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await select_and_ask(pilot, "asterisk", "p")
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, BulkConfirmScreen)
    assert scene.http.get("/bulk").json() == []


async def test_a_bulk_fire_asks_for_the_event(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        confirm = await select_and_ask(pilot, "2", "asterisk", "f")  # paused only, all, fire
        assert str(confirm.query_one("#question", Label).render()).startswith(
            "fire 1 token?\nevery token where status paused\nORDER-4\n"
        )
        confirm.query_one("#yes", Button).press()  # no event yet: the form says so and stays
        await pilot.pause()
        assert str(confirm.query_one("#error", Label).render()) == "name the event to fire"
        confirm.query_one("#event", Input).value = "submitted"
        await answer_yes(pilot, confirm)
    job = scene.http.get("/bulk/1").json()
    assert (job["action"], job["event"]) == ("fire", "submitted")
    assert job["filter"] == {"status": ["paused"]}
    BulkRunner(scene.api.plane).drain()
    assert acts(scene, "ORDER-4") == [("event_deferred", {**CONSOLE_BY, "bulk": 1})]


async def test_with_no_status_filter_each_action_selects_what_it_acts_on(scene: Scene) -> None:
    """ORDER-1 to 3 active, ORDER-4 paused, none failed: as in the CLI, without a status the
    selection takes only the tokens the action can act on, and the question says so."""
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        confirm = await select_and_ask(pilot, "asterisk", "p")
        assert str(confirm.query_one("#question", Label).render()).startswith(
            "pause 3 tokens?\nevery token where status active (the status pause acts on)\n"
            "ORDER-1, ORDER-2, ORDER-3\n"
        )
        await answer_yes(pilot, confirm)
        assert scene.http.get("/bulk/1").json()["filter"] == {"status": ["active"]}
        confirm = await select_and_ask(pilot, "asterisk", "r")
        assert str(confirm.query_one("#question", Label).render()).startswith(
            "resume 1 token?\nevery token where status paused (the status resume acts on)\n"
            "ORDER-4\n"
        )
        await pilot.press("escape")  # No: the selection stays for the next key
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        assert notes(pilot)[-1] == "no token where status failed (the status retry acts on)"
    assert [job["job"] for job in scene.http.get("/bulk").json()] == [1]


async def test_one_token_steered_from_the_console_carries_by(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")  # paused only: ORDER-4 under the cursor
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
    assert acts(scene, "ORDER-4") == [("resumed", CONSOLE_BY)]


async def test_b_lists_the_jobs(scene: Scene) -> None:
    scene.http.post("/bulk", json={"action": "pause", "filter": {"status": ["active"]},
                         "by": {"actor": "bob", "reason": "freeze", "via": "cli"}})  # fmt: skip
    BulkRunner(scene.api.plane).drain()
    scene.http.post("/bulk", json={"action": "resume", "filter": {}})
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        table = app.screen.query_one("#bulk", DataTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        rows = [plain(table.get_row_at(n)) for n in range(2)]
    assert rows == [
        ["2", "resume", "running", "0/4", "-", "2026-10-16 20:48:49", "-"],
        ["1", "pause", "finished", "3/3", "-", "2026-10-16 20:48:49", "bob, cli: freeze"],
    ]


def test_snapshot_bulk_confirmation(snap_compare: Snap, scene: Scene) -> None:
    async def ask(pilot: Pilot[Any]) -> None:
        await select_and_ask(pilot, "asterisk", "c")
        await pilot.press("tab", *"duplicates")
        await pilot.pause()

    assert snap_compare(scene.console(), terminal_size=(110, 28), run_before=ask)


def test_snapshot_bulk_jobs(snap_compare: Snap, scene: Scene) -> None:
    scene.http.post("/bulk", json={"action": "cancel", "filter": {"prefix": "ORDER-3"},
                         "by": {"actor": "bob", "via": "cli"}})  # fmt: skip
    BulkRunner(scene.api.plane).drain()

    async def jobs(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)

    assert snap_compare(scene.console(), terminal_size=(110, 20), run_before=jobs)


async def test_the_cancel_confirmation_takes_a_reason(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")  # paused only: ORDER-4 under the cursor
        await settle(pilot)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        confirm = app.screen
        assert isinstance(confirm, ConfirmScreen)
        confirm.query_one("#reason", Input).value = "duplicate order"
        confirm.query_one("#yes", Button).press()
        await wait_for(pilot, lambda: app.screen is not confirm)
        await settle(pilot)
    by = {"actor": "alice", "reason": "duplicate order", "via": "console"}
    assert acts(scene, "ORDER-4") == [("cancelled", by)]


async def test_y_starts_the_bulk_job_at_once(scene: Scene) -> None:
    """Issue 30 item 5: the confirmation answers `y` as the single-token ones do."""
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        confirm = await select_and_ask(pilot, "1", "asterisk", "p")  # active only, all, pause
        assert confirm.focused is confirm.query_one("#no", Button)
        assert str(confirm.query_one("#keys", Label).render()) == (
            "y: pause them · n or esc: no · tab: a reason, then enter"
        )
        await pilot.press("y")
        await wait_for(pilot, lambda: pilot.app.screen is not confirm)
        await settle(pilot)
        assert notes(pilot)[-1] == "bulk job 1: pause 3 tokens"
    job = scene.http.get("/bulk/1").json()
    assert (job["action"], job["filter"], job["matched"], job["by"]) == (
        "pause",
        {"status": ["active"]},
        3,
        CONSOLE_BY,
    )


async def test_enter_in_the_reason_starts_the_job_with_that_reason(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        confirm = await select_and_ask(pilot, "2", "asterisk", "r")  # paused only, all, resume
        await pilot.press("tab")
        assert confirm.focused is confirm.query_one("#reason", Input)
        await pilot.press(*"the vendor is back, say yes", "enter")
        await wait_for(pilot, lambda: pilot.app.screen is not confirm)
        await settle(pilot)
    job = scene.http.get("/bulk/1").json()
    assert (job["action"], job["filter"], job["matched"]) == ("resume", {"status": ["paused"]}, 1)
    assert job["by"] == {**CONSOLE_BY, "reason": "the vendor is back, say yes"}


async def test_n_and_escape_start_nothing_and_enter_on_no_neither(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        await pilot.press("asterisk")  # the selection stays after a No, for the next key
        for key in ("n", "escape", "enter"):
            await select_and_ask(pilot, "c")
            await pilot.press(key)
            await wait_for(pilot, lambda: not isinstance(pilot.app.screen, BulkConfirmScreen))
            await settle(pilot)
    assert scene.http.get("/bulk").json() == []


async def test_a_bulk_fire_goes_from_field_to_field_with_enter(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        confirm = await select_and_ask(pilot, "2", "asterisk", "f")  # paused only, all, fire
        assert confirm.focused is confirm.query_one("#event", Input)
        await pilot.press(*"submitted", "enter", "enter", *"by hand", "enter")
        await wait_for(pilot, lambda: pilot.app.screen is not confirm)
        await settle(pilot)
    job = scene.http.get("/bulk/1").json()
    assert (job["action"], job["event"], job["by"]) == (
        "fire",
        "submitted",
        {**CONSOLE_BY, "reason": "by hand"},
    )
