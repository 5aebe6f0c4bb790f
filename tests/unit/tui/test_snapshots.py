"""SVG snapshots pinning each screen's layout, with fixed data and a frozen clock.

`make snapshot-update` rewrites them after a deliberate change of the layout.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, TabbedContent

from stateous.tui.app import ConsoleApp, make_console
from stateous.tui.screens.confirm import ConfirmScreen
from stateous.tui.screens.fire import FireScreen
from stateous.tui.screens.start import StartScreen
from stateous.tui.widgets.token_list import TokenList
from tests.unit.tui.helpers import settle, wait_for
from tests.unit.tui.recorded import NOW
from tests.unit.tui.test_other_screens import write_folder

Snap = Callable[..., bool]


def test_tokens_80x24(snap_compare: Snap, console: Callable[..., ConsoleApp]) -> None:
    assert snap_compare(console(), terminal_size=(80, 24), run_before=settle)


def test_tokens_wide(snap_compare: Snap, console: Callable[..., ConsoleApp]) -> None:
    assert snap_compare(console(), terminal_size=(130, 30), run_before=settle)


def test_token_history(snap_compare: Snap, console: Callable[..., ConsoleApp]) -> None:
    async def open_token(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(console(), terminal_size=(100, 30), run_before=open_token)


@pytest.mark.parametrize("tab", ["tasks-tab", "timers-tab", "memory-tab"])
def test_token_tabs(snap_compare: Snap, console: Callable[..., ConsoleApp], tab: str) -> None:
    async def open_tab(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        pilot.app.screen.query_one(TabbedContent).active = tab
        await settle(pilot)

    assert snap_compare(console(), terminal_size=(100, 24), run_before=open_tab)


def test_leases(snap_compare: Snap, console: Callable[..., ConsoleApp]) -> None:
    async def leases(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)

    assert snap_compare(console(), terminal_size=(100, 24), run_before=leases)


def test_outboxes(
    snap_compare: Snap,
    console: Callable[..., ConsoleApp],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    status = {
        "name": "build-box-1",
        "pid": 0,
        "started_at": "2026-10-16T20:50:00Z",
        "running": [
            {
                "task": 2,
                "token": "ORDER-1",
                "state": "review",
                "attempt": 1,
                "started_at": "2026-10-16T20:59:31Z",
            }
        ],
    }
    write_folder(tmp_path / "orders-supervisor", status=status)

    async def outboxes(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("o")
        await wait_for(pilot, lambda: bool(getattr(pilot.app.screen, "views", None)))
        await settle(pilot)
        pilot.app.screen.query_one("#messages", DataTable).focus()
        await settle(pilot)

    app = console(supervisors=["orders-supervisor"])
    assert snap_compare(app, terminal_size=(100, 24), run_before=outboxes)


def test_fire_form(snap_compare: Snap, console: Callable[..., ConsoleApp]) -> None:
    async def fire(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, FireScreen))
        await settle(pilot)

    assert snap_compare(console(), terminal_size=(100, 30), run_before=fire)


def test_start_form(snap_compare: Snap, console: Callable[..., ConsoleApp]) -> None:
    async def start(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, StartScreen))
        await settle(pilot)

    assert snap_compare(console(), terminal_size=(100, 30), run_before=start)


def test_cancel_confirmation(snap_compare: Snap, console: Callable[..., ConsoleApp]) -> None:
    async def cancel(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        pilot.app.screen.query_one("#tokens", TokenList).cursor = 4
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))
        await pilot.pause()

    assert snap_compare(console(), terminal_size=(100, 24), run_before=cancel)


def test_help(snap_compare: Snap, console: Callable[..., ConsoleApp]) -> None:
    async def help_screen(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(console(), terminal_size=(100, 30), run_before=help_screen)


def test_unreachable_banner(snap_compare: Snap, tmp_path: Path) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    app = make_console(
        "http://127.0.0.1:8080",
        transport=httpx.MockTransport(refuse),
        clock=lambda: NOW,
        refresh=60.0,
        frozen=True,
        settings_file=tmp_path / "console.yaml",
    )
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)
