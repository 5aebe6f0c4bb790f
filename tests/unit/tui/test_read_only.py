"""The console with a `read` token: `GET /health` answers `"access": "read"`; every
screen shows, the keys that act show `read only` in the footer and do nothing (no request, no
form; each press says which role it needs), the help marks them, the palette leaves them out; a
snapshot of the footer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.pilot import Pilot

from stateous.tui.app import ConsoleApp, make_console
from stateous.tui.screens.help import HelpScreen, help_rows
from stateous.tui.screens.token import TokenScreen
from stateous.tui.screens.tokens import TokensScreen
from tests.unit.tui.helpers import notes, settle
from tests.unit.tui.recorded import CHECKSUM, NOW, Recorded, make_app

Snap = Callable[..., bool]
ACTING_KEYS = ("p", "r", "c", "f", "s", "R", "m", "M")


def with_access(recorded: Recorded, access: str) -> httpx.ASGITransport:
    """The recorded control plane, whose `GET /health` tells the console's token `access`."""
    inner = make_app(recorded)
    health = {"workflow": "orders", "checksum": CHECKSUM, "role": "holder", "access": access}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/health":
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": json.dumps(health).encode()})
            return
        await inner(scope, receive, send)  # type: ignore[arg-type]  # an ASGI scope

    return httpx.ASGITransport(app=app)  # type: ignore[arg-type]  # an ASGI app by hand


@pytest.fixture
def reader(recorded: Recorded, tmp_path: Path) -> Callable[..., ConsoleApp]:
    """Consoles whose token may only read."""

    def make(access: str = "read") -> ConsoleApp:
        return make_console(
            "http://control-plane.test:8080",
            transport=with_access(recorded, access),
            clock=lambda: NOW,
            settings_file=tmp_path / "console.yaml",
            refresh=60.0,
            frozen=True,
        )

    return make


def footer_keys(app: ConsoleApp) -> list[tuple[str, str, bool]]:
    """The keys of the screen that the footer shows: key, description, enabled."""
    return [
        (key, active.binding.description, active.enabled)
        for key, active in app.screen.active_bindings.items()
        if active.binding.show and active.node is app.screen
    ]


async def test_the_keys_that_act_show_read_only_and_do_nothing(
    reader: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = reader()
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        assert app.read_only
        assert isinstance(app.screen, TokensScreen)
        assert footer_keys(app) == [
            ("slash", "Search", True),
            ("h", "Children", True),
            ("asterisk", "Select all", True),
            *[(key, "read only", True) for key in ACTING_KEYS],
        ]
        for key in ACTING_KEYS:
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(app.screen, TokensScreen), key  # no form, no confirmation
        await pilot.press("enter")  # reading goes on: the token screen opens
        await settle(pilot)
        assert isinstance(app.screen, TokenScreen)
        assert [k for k, d, _ in footer_keys(app) if d == "read only"] == list(ACTING_KEYS)
        for key in ACTING_KEYS:
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(app.screen, TokenScreen), key
    assert recorded.requests == []
    # Each press says which role the key needs, on both screens.
    said = [
        f"{what} needs the operate or admin role: this console's token has read"
        for what in ("Pause", "Resume", "Cancel", "Fire", "Start", "Retry", "Move", "Migrate")
    ]
    assert notes(pilot) == said * 2  # fmt: skip


async def test_an_operate_token_keeps_the_keys(
    reader: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = reader("operate")
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        assert not app.read_only
        assert [k for k, d, on in footer_keys(app) if on][3:] == list(ACTING_KEYS)
        await pilot.press("p")
        await settle(pilot)
    assert recorded.requests == ["pause ORDER-1"]


async def test_the_help_and_the_palette_say_read_only(reader: Callable[..., ConsoleApp]) -> None:
    app = reader()
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        rows = {row.key: row.does for row in help_rows(app.screen, app)}
        assert rows["p"] == "Pause (read only)"
        assert rows["R"] == "Retry (read only)"
        assert rows["u"] == "Parent"
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert "Open the parent token" in titles
        assert not {"Retry the failed token", "Move the token to a state"} & set(titles)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)


def test_snapshot_read_only_footer(snap_compare: Snap, reader: Callable[..., ConsoleApp]) -> None:
    async def shown(pilot: Pilot[Any]) -> None:
        await settle(pilot)

    assert snap_compare(reader(), terminal_size=(110, 24), run_before=shown)
