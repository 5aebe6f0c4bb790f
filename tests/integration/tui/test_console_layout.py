"""The console at the sizes an operator has: at 160x45 the tokens screen's footer shows every key
it lists (the screens' keys share one label) and a long selection wraps instead of being cut; at
80x24 the schedules' hint wraps. Pilot checks and SVG snapshots."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Footer, Static

from stateous.tui.app import ConsoleApp
from stateous.tui.screens.tokens import TokensScreen
from tests.integration.tui.test_console_ops import Scene, settle
from tests.integration.tui.test_schedules_console import open_schedules, scene

__all__ = ["scene"]  # the schedules' scene, a fixture of these tests too

Snap = Callable[..., bool]


def footer_text(app: ConsoleApp) -> str:
    """What the footer draws, as text."""
    footer = app.screen.query_one(Footer)
    return " ".join(
        " ".join(str(key.render()).split()) for key in footer.children if key.region.width
    )


async def selected(pilot: Pilot[Any]) -> None:
    """Active tokens only, all of them selected."""
    await settle(pilot)
    await pilot.press("1", "asterisk")
    await settle(pilot)


async def test_at_160_columns_the_footer_and_the_selection_fit(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(160, 45)) as pilot:
        await selected(pilot)
        screen = app.screen
        assert isinstance(screen, TokensScreen)
        footer = screen.query_one(Footer)
        shown = [key for key in footer.children if key.region.width]
        assert all(key.region.right <= 160 for key in shown)
        assert footer_text(app).startswith("/ Search h Children * Select all p Pause")
        assert footer_text(app).endswith(" screens ? Help q Quit ^p palette")
        filters = screen.query_one("#filters", Static)
        assert str(filters.render()).endswith("selected: every token where status active (*)")
        assert filters.region.height == 1


async def test_at_80_columns_the_selection_line_wraps(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(80, 24)) as pilot:
        await selected(pilot)
        filters = app.screen.query_one("#filters", Static)
        assert filters.region.height == 2


async def test_at_80_columns_the_schedules_hint_wraps(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_schedules(pilot, "S")
        hint = app.screen.query_one("#schedules-hint", Static)
        assert hint.region.height == 2


def test_snapshot_tokens_with_a_selection_at_160x45(snap_compare: Snap, scene: Scene) -> None:
    assert snap_compare(scene.console(), terminal_size=(160, 45), run_before=selected)


def test_snapshot_schedules_at_80x24(snap_compare: Snap, scene: Scene) -> None:
    async def schedules(pilot: Pilot[Any]) -> None:
        await open_schedules(pilot, "S")

    assert snap_compare(scene.console(), terminal_size=(80, 24), run_before=schedules)
