"""The token screen's findings and the repair keys `R` and `m`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList, RichLog, Static

from stateous.tui.app import ConsoleApp
from stateous.tui.screens.confirm import ConfirmScreen
from stateous.tui.screens.repair import MoveScreen
from stateous.tui.screens.token import TokenScreen
from tests.unit.tui.helpers import notes, settle, wait_for
from tests.unit.tui.recorded import Recorded

BY = {"actor": "alice", "via": "console"}
Snap = Callable[..., bool]


@pytest.fixture(autouse=True)
def actor(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("STATEOUS_ACTOR", "alice")
    yield


def findings(app: ConsoleApp) -> list[str]:
    return str(app.screen.query_one("#findings", Static).render()).splitlines()


def log_lines(app: ConsoleApp) -> list[str]:
    return [strip.text for strip in app.screen.query_one("#history", RichLog).lines]


async def open_token(pilot: Pilot[Any], app: ConsoleApp, token: str) -> None:
    await settle(pilot)
    app.open_token(token)
    await settle(pilot)
    assert isinstance(app.screen, TokenScreen)


async def test_findings_are_shown_above_the_tabs_and_refreshed_live(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(140, 30)) as pilot:
        await open_token(pilot, app, "ORDER-1")
        assert findings(app) == [
            "  claimed: 'build-box-1' works on task 2 (attempt 1); its lease ends at "
            "2026-10-16T21:01:10Z unless it beats (since 20:59:31)",
            "  last_event_refused: 'submitted' was refused: no transition for 'submitted' from "
            "'review' (since 20:59:50)",
        ]
        recorded.why["ORDER-1"] = [
            {"code": "supervisor_gone", "sentence": "'build-box-1' holds task 2 but is not live"}
        ]
        app.screen.refresh_now()  # type: ignore[attr-defined]
        await settle(pilot)
        assert findings(app) == ["  supervisor_gone: 'build-box-1' holds task 2 but is not live"]


async def test_retry_asks_then_retries_a_failed_token(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(140, 30)) as pilot:
        await open_token(pilot, app, "ORDER-5")
        assert findings(app)[0].startswith("  ended: token 'ORDER-5' failed in 'draft'")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.query_one("#question").render())
        assert question == "Retry token 'ORDER-5'?\nIt enters 'draft' again, as a new visit."
        await pilot.press("n")
        await settle(pilot)
        assert recorded.requests == []
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert recorded.requests == [f"retry ORDER-5 {BY}"]
        assert str(app.screen.query_one("#line", Static).render()) == (
            "ORDER-5: draft (visit 2), active"
        )
        assert log_lines(app)[-1] == "21:00:00  #1  retried in draft [alice, console]"
        assert findings(app) == ["  queued_behind: token 'ORDER-5' is active"]


async def test_retry_of_a_token_that_did_not_fail_asks_nothing(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(140, 30)) as pilot:
        await open_token(pilot, app, "ORDER-1")
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, TokenScreen)
        assert recorded.requests == []
        assert notes(pilot)[-1] == ("token 'ORDER-1' is active; only a failed token can be retried")


async def test_move_lists_the_states_and_moves(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(140, 30)) as pilot:
        await open_token(pilot, app, "ORDER-1")
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, MoveScreen))
        states = app.screen.query_one(OptionList)
        labels = [str(states.get_option_at_index(i).prompt) for i in range(states.option_count)]
        assert labels == ["draft", "review  (now)", "checks"]
        await pilot.press("escape")
        await settle(pilot)
        assert recorded.requests == []
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, MoveScreen))
        states = app.screen.query_one(OptionList)
        states.highlighted = 0
        await pilot.press("enter")
        await settle(pilot)
        assert recorded.requests == [f"move ORDER-1 draft {BY}"]
        assert str(app.screen.query_one("#line", Static).render()) == "ORDER-1: draft, active"
        assert log_lines(app)[-1] == "21:00:00  #13  moved from review to draft [alice, console]"


async def test_move_of_a_child_is_refused_in_the_console(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(140, 30)) as pilot:
        await open_token(pilot, app, "ORDER-3.checks.1.stock")
        await pilot.press("m")
        await settle(pilot)
        assert isinstance(app.screen, TokenScreen)
        assert recorded.requests == []
        assert notes(pilot)[-1] == (
            "token 'ORDER-3.checks.1.stock' is a child of 'ORDER-3': steer its parent"
        )


def test_move_list_snapshot(snap_compare: Snap, console: Callable[..., ConsoleApp]) -> None:
    async def move(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MoveScreen))
        await pilot.pause()

    assert snap_compare(console(), terminal_size=(100, 24), run_before=move)


def test_retry_confirmation_snapshot(
    snap_compare: Snap, console: Callable[..., ConsoleApp]
) -> None:
    async def retry(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        pilot.app.open_token("ORDER-5")  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))
        await pilot.pause()

    assert snap_compare(console(), terminal_size=(100, 24), run_before=retry)


async def test_retry_takes_a_reason_typed_after_tab_and_enter_sends_it(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(140, 30)) as pilot:
        await open_token(pilot, app, "ORDER-5")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert app.screen.focused is app.screen.query_one("#no")
        await pilot.press("tab", *"vendor back", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
    assert recorded.requests == [
        "retry ORDER-5 {'actor': 'alice', 'reason': 'vendor back', 'via': 'console'}"
    ]


async def test_move_names_the_token_and_takes_a_reason(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(140, 30)) as pilot:
        await open_token(pilot, app, "ORDER-1")
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, MoveScreen))
        assert str(app.screen.query_one("#question").render()) == (
            "move ORDER-1 (in review, active) to which state?"
        )
        app.screen.query_one(OptionList).highlighted = 0
        await pilot.press("tab", *"done by hand", "enter")  # enter in the reason: move
        await settle(pilot)
        assert not isinstance(app.screen, MoveScreen)
    assert recorded.requests == [
        "move ORDER-1 draft {'actor': 'alice', 'reason': 'done by hand', 'via': 'console'}"
    ]
