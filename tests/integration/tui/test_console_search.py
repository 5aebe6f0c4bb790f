"""`/` on the tokens screen finds tokens by their context: `customer=acme`, several
`KEY=VALUE` words, a prefix beside them, the status filter, a `*` selection of what was found,
and a key that is not searchable answered in the error line. Pilot tests against the real API
(SQLite, a fake clock)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from stateous.control.clock import FakeClock
from stateous.tui.app import ConsoleApp
from stateous.tui.screens.token import TokenScreen
from stateous.tui.screens.tokens import TokensScreen
from stateous.tui.widgets.token_list import TokenList
from tests.integration.tui.test_console_ops import Scene, settle
from tests.support import sqlite_url
from tests.support.app import running_api
from tests.support.graphs import ORDERS, variant
from tests.unit.tui.helpers import notes, wait_for


def searching() -> dict[str, Any]:
    """ORDERS whose context has a customer and an order id to search by, written by hand as
    the compiler writes `flow.search("customer", "order_id")`."""
    doc = variant(ORDERS)
    item = doc["schemas"]["Item"]
    item["properties"]["customer"] = {"type": "string"}
    item["properties"]["order_id"] = {"type": "integer"}
    doc["search"] = ["customer", "order_id"]
    return doc


ORDERS_OF = {
    "ACME-1": ("acme", 4711),
    "ACME-2": ("acme", 4712),
    "GLOBEX-1": ("globex", 4711),
    "ACME-3": ("acme corp", 4713),
}


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    """Four orders in draft, started a second apart; ACME-2 paused."""
    clock = FakeClock()
    with running_api(sqlite_url(tmp_path), searching(), clock) as api:
        scene = Scene(api, clock)
        for token, (customer, order_id) in ORDERS_OF.items():
            context = {"title": "t", "customer": customer, "order_id": order_id}
            scene.post("/tokens", {"token": token, "context": context})
            clock.advance(1)
        scene.post("/tokens/ACME-2/pause", {})
        yield scene
        scene.http.close()


def shown(app: ConsoleApp) -> list[str]:
    return [key for key, _ in app.screen.query_one("#tokens", TokenList).rows]


def filters(app: ConsoleApp) -> str:
    return str(app.screen.query_one("#filters", Static).render())


async def search(pilot: Pilot[Any], text: str) -> None:
    """`/`, the search typed over whatever it held."""
    await pilot.press("slash")
    pilot.app.screen.query_one("#search", Input).value = ""
    await pilot.press(*text)
    await settle(pilot)


async def test_find_by_one_key_then_two_then_a_prefix_beside_them(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: len(shown(app)) == 4)
        await search(pilot, "customer=acme")
        await wait_for(pilot, lambda: shown(app) == ["ACME-2", "ACME-1"])
        assert "context: customer=acme" in filters(app)
        assert "2 of the 2 found" in filters(app)
        await search(pilot, "customer=acme order_id=4711")
        await wait_for(pilot, lambda: shown(app) == ["ACME-1"])
        await search(pilot, "order_id=4711")
        await wait_for(pilot, lambda: shown(app) == ["GLOBEX-1", "ACME-1"])
        await search(pilot, "order_id=4711 GLOB")
        await wait_for(pilot, lambda: shown(app) == ["GLOBEX-1"])
        assert "id: GLOB* (/) · context: order_id=4711" in filters(app)
        await search(pilot, 'customer="acme corp"')
        await wait_for(pilot, lambda: shown(app) == ["ACME-3"])
        # enter opens the only token found
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TokenScreen))


async def test_status_filter_selection_and_escape(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: len(shown(app)) == 4)
        await search(pilot, "customer=acme")
        await wait_for(pilot, lambda: shown(app) == ["ACME-2", "ACME-1"])
        app.screen.query_one("#tokens", TokenList).focus()
        await pilot.press("1")
        await wait_for(pilot, lambda: shown(app) == ["ACME-1"])
        screen = app.screen
        assert isinstance(screen, TokensScreen)
        assert screen.current_filter() == {"status": ["active"], "context": {"customer": "acme"}}
        await pilot.press("asterisk")
        await settle(pilot)
        assert "selected: every token where status active, context customer=acme (*)" in (
            filters(app)
        )
        await pilot.press("asterisk", "0", "escape")
        await wait_for(pilot, lambda: len(shown(app)) == 4)
        assert "context:" not in filters(app)


async def test_a_key_that_is_not_searchable_shows_in_the_error_line_once(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: len(shown(app)) == 4)
        await search(pilot, "title=t")
        await wait_for(pilot, lambda: len(shown(app)) == 0)
        refused = [n for n in notes(pilot) if n.startswith("invalid_argument: ")]
        assert len(refused) == 1, notes(pilot)
        assert "'title'" in refused[0] and "customer, order_id" in refused[0], refused
        assert "context: title=t (refused)" in filters(app)
        screen = app.screen
        assert isinstance(screen, TokensScreen)
        screen.refresh_now()  # a poll asks again: the same refusal is not shown twice
        await settle(pilot)
        assert len([n for n in notes(pilot) if n.startswith("invalid_argument: ")]) == 1
        await search(pilot, "=t")
        assert "context: '=t' is not KEY=VALUE, such as customer=acme" in filters(app)
