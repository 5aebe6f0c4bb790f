"""`?` lists every key the footer shows, on every screen (issue 30 item 5): the help is built
from the same bindings, so that it cannot drift from them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets._footer import FooterKey

from stateous.tui.app import ConsoleApp
from stateous.tui.screens.help import HelpScreen, footer_bindings
from tests.unit.tui.helpers import settle


@pytest.mark.parametrize(
    ("keys", "title"),
    [
        ((), "tokens"),
        (("enter",), "token ORDER-1"),
        (("l",), "leases"),
        (("o",), "supervisors and outboxes"),
        (("i",), "inbox"),
        (("b",), "bulk jobs"),
        (("v",), "versions"),
        (("o", "s"), "schedules"),
    ],
)
async def test_help_lists_every_key_of_the_footer(
    console: Callable[..., ConsoleApp], keys: tuple[str, ...], title: str
) -> None:
    app = console()
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)
        screen = app.screen
        assert screen.title == title
        footer = {key.action for key in screen.query(FooterKey)}
        # Each key the footer draws, and the bindings it draws them from, the palette's too.
        assert footer == {b.binding.action for b in footer_bindings(screen, app)}
        assert {"show('inbox')", "show('bulk')", "command_palette"} <= footer
        await pilot.press("question_mark")
        await settle(pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        listed = {row.action for row in help_screen.rows}
        assert footer <= listed
        keys_listed = [row.key for row in help_screen.rows]
        assert {"i", "b", "v", "ctrl+p", "?", "q", "t", "l", "o"} <= set(keys_listed)
        assert len(keys_listed) == len(set(keys_listed)), keys_listed


async def test_help_lists_the_screen_keys_first_then_the_console(
    console: Callable[..., ConsoleApp],
) -> None:
    app = console()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        rows = [(row.key, row.does, row.everywhere) for row in app.screen.rows]
    assert rows[:4] == [
        ("enter", "Open", False),
        ("/", "Search", False),
        ("h", "Children", False),
        ("*", "Select all", False),
    ]
    assert rows[-10:] == [
        ("t", "the tokens screen", True),
        ("l", "the leases screen", True),
        ("o", "supervisors and outboxes", True),
        ("i", "the tokens waiting for a person", True),
        ("b", "the bulk jobs and their progress", True),
        ("S", "the schedules", True),  # `s` is the tokens screen's Start here
        ("v", "the workflow's versions and their live tokens", True),
        ("?", "this help", True),
        ("q", "quit", True),
        ("ctrl+p", "the command palette: every action by name, and the themes", True),
    ]
