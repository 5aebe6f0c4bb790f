"""An error nobody expected, in a key's action, a screen's handler or a worker, is shown as a
notification and written to the console's log with its traceback, and the console goes on."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.events import Key
from textual.screen import Screen

import stateous.tui.screens as screens
from stateous.tui.app import ConsoleApp
from stateous.tui.screens.tokens import TokensScreen
from stateous.tui.unexpected import TITLE, GuardedModal, GuardedScreen
from tests.unit.tui.helpers import settle


class Broken(Exception):
    """The error of the screen below."""


class BrokenScreen(GuardedScreen[None]):
    """A screen whose `x` raises in its action, `y` in a worker, and `z` in its key handler."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("x", "boom", "Boom"),
        Binding("y", "later", "Later"),
    ]

    def action_boom(self) -> None:
        raise Broken("the action of x")

    def action_later(self) -> None:
        self.fail_later()

    @work(group="broken")
    async def fail_later(self) -> None:
        raise Broken("the worker of y")

    def on_key(self, event: Key) -> None:
        if event.key == "z":
            raise Broken("the handler of z")


def shown(app: ConsoleApp) -> list[tuple[str, str]]:
    return [(n.title, n.message) for n in app._notifications if n.title == TITLE]


async def test_an_unexpected_error_is_shown_logged_and_survived(
    console: Callable[..., ConsoleApp], tmp_path: Path
) -> None:
    log = tmp_path / "logs" / "console.log"
    app = console(log_file=log)
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        app.push_screen(BrokenScreen())
        await pilot.pause()
        for key in ("x", "y", "z"):
            await pilot.press(key)
            await pilot.pause(0.1)
        assert app.is_running
        assert isinstance(app.screen, BrokenScreen)
        ending = f" (the console goes on; details in {log})"
        assert shown(app) == [
            (TITLE, "Broken: the action of x" + ending),
            (TITLE, "Broken: the worker of y" + ending),
            (TITLE, "Broken: the handler of z" + ending),
        ]
        # The screen's message loop still runs: the next key still reaches it.
        await pilot.press("x")
        await pilot.pause(0.1)
        assert len(shown(app)) == 4
        app.pop_screen()
        await pilot.pause()
        assert isinstance(app.screen, TokensScreen)
        await pilot.press("q")
    assert app.return_code == 0
    text = log.read_text(encoding="utf-8")
    for what in ("the action of x", "the worker of y", "the handler of z"):
        assert f" ERROR unexpected error; the console goes on: Broken: {what}\n" in text
    assert text.count("Traceback (most recent call last):") == 4


async def test_without_a_log_file_the_error_is_still_shown(
    console: Callable[..., ConsoleApp],
) -> None:
    app = console()
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        app.push_screen(BrokenScreen())
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause(0.1)
        assert shown(app) == [(TITLE, "Broken: the action of x (the console goes on)")]
        assert app.is_running


def test_every_screen_of_the_console_is_guarded() -> None:
    """Every screen class of the console keeps its handlers' errors from ending it."""
    found = []
    for info in pkgutil.iter_modules(screens.__path__):
        module = importlib.import_module(f"{screens.__name__}.{info.name}")
        found += [
            cls
            for cls in vars(module).values()
            if isinstance(cls, type)
            and issubclass(cls, Screen)
            and cls.__module__ == module.__name__
        ]
    assert len(found) >= 14
    assert [c.__name__ for c in found if not issubclass(c, (GuardedScreen, GuardedModal))] == []
