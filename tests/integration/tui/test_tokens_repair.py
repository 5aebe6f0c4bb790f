"""The repair keys on the tokens screen (issue 15) against the real API (SQLite, a
fake clock): `R` retries the highlighted failed token after a confirmation, `m` moves it to a
state from the list; with a `*` selection `R` is a bulk retry confirmed like `p` `r` `c` `f`,
and `m` says it moves one token only. Pilot tests and an SVG snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Label, OptionList

from stateous.control.bulk_runner import BulkRunner
from stateous.control.clock import FakeClock
from stateous.tui.screens.bulk import BulkConfirmScreen
from stateous.tui.screens.confirm import ConfirmScreen
from stateous.tui.screens.repair import MoveScreen
from stateous.tui.screens.tokens import TokensScreen
from tests.integration.tui.test_bulk_console import answer_yes, select_and_ask
from tests.integration.tui.test_console_ops import Scene, settle
from tests.support import sqlite_url
from tests.support.app import running_api
from tests.support.graphs import ORDERS
from tests.unit.tui.helpers import notes, wait_for

Snap = Callable[..., bool]
CONSOLE_BY = {"actor": "alice", "via": "console"}


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    """ORDER-1 and ORDER-2 failed in draft, ORDER-3 active in draft, on a fake clock."""
    monkeypatch.setenv("STATEOUS_ACTOR", "alice")
    clock = FakeClock()
    with running_api(sqlite_url(tmp_path), ORDERS, clock) as api:
        scene = Scene(api, clock)
        for number in (1, 2, 3):
            scene.post("/tokens", {"token": f"ORDER-{number}", "context": {"title": "t"}})
        for _ in (1, 2):  # the oldest queued task first: ORDER-1's, then ORDER-2's
            grant = scene.post("/tasks/claim", {"supervisor": "box", "states": ["draft"]})
            report = {"kind": "failed", "error": "the vendor is down", "supervisor": "box"}
            scene.post(f"/tasks/{grant['task']}/report", report)
        clock.advance(5)
        yield scene
        scene.http.close()


def status_of(scene: Scene, token: str) -> tuple[str, str, int]:
    found = scene.http.get(f"/tokens/{token}").json()
    return found["state"], found["status"], found["visit"]


def operator_rows(scene: Scene, token: str) -> list[tuple[str, dict[str, Any]]]:
    rows = scene.http.get(f"/tokens/{token}/history").json()
    return [(r["kind"], r["data"]) for r in rows if "by" in r["data"]]


async def highlight(pilot: Pilot[Any], *filters: str) -> TokensScreen:
    """Apply the status keys `filters`; the first row of what is left is under the cursor."""
    await settle(pilot)
    for key in filters:
        await pilot.press(key)
        await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, TokensScreen)
    return screen


def test_the_fixture_fails_two_tokens(scene: Scene) -> None:
    assert [status_of(scene, f"ORDER-{n}") for n in (1, 2, 3)] == [
        ("draft", "failed", 1),
        ("draft", "failed", 1),
        ("draft", "active", 1),
    ]


async def test_r_retries_the_highlighted_failed_token_after_a_confirmation(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        screen = await highlight(pilot, "4")  # failed only
        highlighted = screen.selected_token()
        assert highlighted is not None
        token = str(highlighted["token"])
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.query_one("#question", Label).render())
        assert question == f"Retry token '{token}'?\nIt enters 'draft' again, as a new visit."
        await pilot.press("n")
        await settle(pilot)
        assert status_of(scene, token) == ("draft", "failed", 1)
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is screen
        assert notes(pilot)[-1] == f"{token}: draft (visit 2), active"
    assert status_of(scene, token) == ("draft", "active", 2)
    assert operator_rows(scene, token) == [("retried", {"state": "draft", "by": CONSOLE_BY})]
    assert scene.http.get("/bulk").json() == []


async def test_r_on_a_token_that_did_not_fail_asks_nothing(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        screen = await highlight(pilot, "1")  # active only: ORDER-3
        await pilot.press("R")
        await settle(pilot)
        assert app.screen is screen
        assert notes(pilot)[-1] == ("token 'ORDER-3' is active; only a failed token can be retried")
    assert operator_rows(scene, "ORDER-3") == []


async def test_m_lists_the_states_and_moves_the_highlighted_token(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        screen = await highlight(pilot, "1")  # active only: ORDER-3
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, MoveScreen))
        states = app.screen.query_one(OptionList)
        labels = [str(states.get_option_at_index(i).prompt) for i in range(states.option_count)]
        assert labels == ["draft  (now)", "review"]
        states.highlighted = 1
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen
        assert notes(pilot)[-1] == "ORDER-3: review, active"
    assert status_of(scene, "ORDER-3") == ("review", "active", 1)
    assert operator_rows(scene, "ORDER-3") == [
        ("moved", {"from": "draft", "to": "review", "by": CONSOLE_BY})
    ]


async def test_star_then_r_is_a_bulk_retry_of_the_selection(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        confirm = await select_and_ask(pilot, "4", "asterisk", "R")  # failed only, all, retry
        question = str(confirm.query_one("#question", Label).render())
        assert question == (
            "retry 2 tokens?\nevery token where status failed\nORDER-1, ORDER-2\n"
            "One bulk job acts on each, and goes on if the console closes."
        )
        assert str(confirm.query_one("#yes", Button).label) == "Retry them (y)"
        await pilot.press("tab", *"vendor fixed")  # No has the focus; tab: the reason
        await answer_yes(pilot, confirm)
        assert not isinstance(app.screen, BulkConfirmScreen)
        assert notes(pilot)[-1] == "bulk job 1: retry 2 tokens"
    job = scene.http.get("/bulk/1").json()
    assert (job["action"], job["filter"], job["matched"]) == ("retry", {"status": ["failed"]}, 2)
    by = {"actor": "alice", "reason": "vendor fixed", "via": "console"}
    assert job["by"] == by
    assert BulkRunner(scene.api.plane).drain() == 2
    for token in ("ORDER-1", "ORDER-2"):
        assert status_of(scene, token) == ("draft", "active", 2)
        assert operator_rows(scene, token) == [
            ("retried", {"state": "draft", "by": {**by, "bulk": 1}})
        ]
    assert operator_rows(scene, "ORDER-3") == []


async def test_star_then_r_answered_no_starts_no_job(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await select_and_ask(pilot, "4", "asterisk", "R")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, TokensScreen)
    assert scene.http.get("/bulk").json() == []
    assert status_of(scene, "ORDER-1") == ("draft", "failed", 1)


async def test_star_then_m_says_a_move_is_for_one_token(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        screen = await highlight(pilot, "asterisk")
        assert screen.selection == {}
        await pilot.press("m")
        await settle(pilot)
        assert app.screen is screen
        assert notes(pilot)[-1] == (
            "m moves one token: clear the selection (* or esc) and move the highlighted token"
        )
        assert screen.selection == {}  # the selection stays
    assert status_of(scene, "ORDER-3") == ("draft", "active", 1)
    assert scene.http.get("/bulk").json() == []


def test_snapshot_bulk_retry_confirmation(snap_compare: Snap, scene: Scene) -> None:
    async def ask(pilot: Pilot[Any]) -> None:
        await select_and_ask(pilot, "4", "asterisk", "R")
        await pilot.press("tab", *"vendor fixed")
        await pilot.pause()

    assert snap_compare(scene.console(), terminal_size=(110, 28), run_before=ask)


def test_snapshot_move_list_over_the_tokens_screen(snap_compare: Snap, scene: Scene) -> None:
    async def move(pilot: Pilot[Any]) -> None:
        await highlight(pilot, "1")
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MoveScreen))
        await pilot.pause()

    assert snap_compare(scene.console(), terminal_size=(110, 24), run_before=move)
