"""The tokens screen against the recorded control plane: list, filters, search, steering."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import DataTable, Input, Static

from stateous.tui.app import ConsoleApp
from stateous.tui.screens.confirm import ConfirmScreen
from stateous.tui.screens.token import TokenScreen
from stateous.tui.screens.tokens import TokensScreen, arrange
from stateous.tui.widgets.token_list import TokenList
from tests.unit.tui.helpers import plain, settle, wait_for
from tests.unit.tui.recorded import Recorded


def shown_ids(app: ConsoleApp) -> list[str]:
    return app.screen.query_one("#tokens", TokenList).keys


async def test_lists_tokens_most_recently_moved_first_with_children_below_parents(
    console: Callable[..., ConsoleApp],
) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert shown_ids(app) == [
            "ORDER-1",
            "ORDER-8",
            "ORDER-2",
            "ORDER-9",
            "ORDER-3",
            "ORDER-3.checks.1.stock",
            "ORDER-4",
            "ORDER-5",
            "ORDER-6",
        ]
        table = app.screen.query_one("#tokens", TokenList)
        assert plain(table.row("ORDER-2")) == ["ORDER-2", "draft", "2", "paused", "2m", ""]
        assert table.row("ORDER-3.checks.1.stock")[0].plain == "└ ORDER-3.checks.1.stock"
        await pilot.press("h")
        assert "ORDER-3.checks.1.stock" not in shown_ids(app)


async def test_status_keys_filter_through_the_api(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert shown_ids(app) == ["ORDER-2"]
        await pilot.press("0")
        await settle(pilot)
        assert len(shown_ids(app)) == 9


async def test_search_by_id_prefix_and_state_filter(console: Callable[..., ConsoleApp]) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash", "O", "R", "D", "E", "R", "-", "3")
        assert shown_ids(app) == ["ORDER-3", "ORDER-3.checks.1.stock"]
        await pilot.press("escape")
        assert len(shown_ids(app)) == 9
        screen = app.screen
        assert isinstance(screen, TokensScreen)
        states = screen.query_one("#states", DataTable)
        assert [str(r.value) for r in states.rows] == ["draft", "review", "checks", "stock/count"]
        states.focus()
        states.move_cursor(row=1)
        await pilot.press("enter")
        assert shown_ids(app) == ["ORDER-1", "ORDER-9", "ORDER-4"]
        assert "state: review" in str(screen.query_one("#filters", Static).render())


async def test_states_panel_counts_active_paused_and_queued(
    console: Callable[..., ConsoleApp],
) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        states = app.screen.query_one("#states", DataTable)
        assert plain(states.get_row("draft")) == ["draft", "1", "1", "1"]
        assert plain(states.get_row("stock/count")) == ["stock/count", "1", "0", "0"]


def test_arrange_keeps_an_orphan_child_in_place() -> None:
    tokens = [
        {"token": "A.s.1.w", "parent": "A", "state": "x"},
        {"token": "B", "state": "x"},
    ]
    rows = arrange(tokens, state=None, prefix="", hide_children=False)
    assert [(t["token"], depth) for t, depth in rows] == [("A.s.1.w", 0), ("B", 0)]


async def test_pause_then_resume_refused_shows_the_code_and_sentence(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("p")  # ORDER-1 is selected and active
        await settle(pilot)
        table = app.screen.query_one("#tokens", TokenList)
        assert table.row("ORDER-1")[3].plain == "paused"
        await pilot.press("p")  # paused already: refused
        await settle(pilot)
        assert recorded.requests == ["pause ORDER-1", "pause ORDER-1"]
        messages = [n.message for n in app._notifications]
        assert (
            "token_not_active: token 'ORDER-1' is paused; only an active token can be paused"
            in messages
        )
        assert table.row("ORDER-1")[3].plain == "paused"


async def test_a_child_has_no_steering_keys(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#tokens", TokenList)
        table.move_to("ORDER-3.checks.1.stock")
        await pilot.press("p")
        await settle(pilot)
        assert recorded.requests == []
        assert any("steer its parent" in n.message for n in app._notifications)


async def test_cancel_asks_first_naming_the_children(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#tokens", TokenList)
        table.move_to("ORDER-3")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.query_one("#question", Static).render())
        assert "Cancel token 'ORDER-3' for good?" in question
        assert "ORDER-3.checks.1.stock" in question
        await pilot.press("n")
        await settle(pilot)
        assert recorded.requests == []
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert recorded.requests == ["cancel ORDER-3"]
        assert app.screen.query_one("#tokens", TokenList).row("ORDER-3")[3].plain == "cancelled"


async def test_the_id_column_is_as_wide_as_the_longest_id(
    console: Callable[..., ConsoleApp],
) -> None:
    app = console()
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#tokens", TokenList)
        # The longest: the child "└ ORDER-3.checks.1.stock" (24), and its parent "ORDER-3".
        assert [(label, width) for label, _, width in table.columns] == [
            ("id", 24),
            ("state", 12),
            ("visit", 5),
            ("status", 9),
            ("in state", 8),
            ("parent", 7),
        ]
        await pilot.press("h")  # children hidden: the ids are 7 wide, the parent column empty
        await settle(pilot)
        assert [width for _, _, width in table.columns] == [7, 12, 5, 9, 8, 6]


async def test_enter_in_the_search_gives_the_keys_back_to_the_tokens(
    console: Callable[..., ConsoleApp],
) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash", "O", "R", "D", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TokensScreen)  # several match: none opens
        assert isinstance(app.focused, TokenList)
        await pilot.press("h")  # the next key is a key of the screen, not a letter of the search
        assert screen.query_one("#search", Input).value == "ORD"
        assert screen.hide_children
        # An exact id opens its token; back from it, the keys are the list's again.
        await pilot.press("slash", *"ER-3", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TokenScreen))
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen
        assert isinstance(app.focused, TokenList)
