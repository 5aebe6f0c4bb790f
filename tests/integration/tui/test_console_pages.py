"""The console reads a page at a time (issue 32): the tokens screen asks for 100
tokens a poll and loads the next page when the cursor reaches the last row, its filter line says
that more follow, and the header counts the inbox as `100+` past one page. Pilot tests against
the real API (SQLite, a fake clock), each request the console sends recorded."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from textual.widgets import Static

from stateous.control.clock import FakeClock
from stateous.tui.app import ConsoleApp, make_console
from stateous.tui.screens.inbox import InboxScreen
from stateous.tui.screens.tokens import TokensScreen
from stateous.tui.widgets import StatusBar
from stateous.tui.widgets.token_list import TokenList
from tests.integration.tui.test_console_ops import SHOWN_URL, Scene, ToRealApi, settle
from tests.support import sqlite_url
from tests.support.app import running_api
from tests.support.graphs import ORDERS
from tests.unit.tui.helpers import wait_for

TOKENS = 250
"""T-001 (the first started) to T-250, a second apart: the listing shows T-250 first."""
WAITING = 101
"""The first 101 tokens' draft tasks wait for a person: one more than a page of the inbox."""
BOX = "box-1"


def ids(first: int, last: int) -> list[str]:
    """`T-first` down to `T-last`, as the listing orders them (most recently moved first)."""
    return [f"T-{n:03d}" for n in range(first, last - 1, -1)]


class Recording(ToRealApi):
    """The real API, each request's path and query kept in order."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.sent: list[tuple[str, dict[str, list[str]]]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.url.path, parse_qs(urlsplit(str(request.url)).query)))
        return await super().handle_async_request(request)

    def asked(self, path: str) -> list[dict[str, list[str]]]:
        """The queries of the requests sent to `path`, in order."""
        return [query for sent, query in self.sent if sent == path]


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    """250 tokens in draft started a second apart; the first 101 wait for a person."""
    clock = FakeClock()
    root = tmp_path_factory.mktemp("pages")
    with running_api(sqlite_url(root), ORDERS, clock) as api:
        scene = Scene(api, clock)
        for n in range(1, TOKENS + 1):
            scene.post("/tokens", {"token": f"T-{n:03d}", "context": {"title": "t"}})
            clock.advance(1)
        for _ in range(WAITING):
            grant = scene.post("/tasks/claim", {"supervisor": BOX, "states": ["draft"]})
            scene.post(f"/tasks/{grant['task']}/report", {"kind": "waiting", "supervisor": BOX})
        yield scene
        scene.http.close()


def console(scene: Scene) -> tuple[ConsoleApp, Recording]:
    recording = Recording(scene.api.url)
    app = make_console(
        SHOWN_URL,
        transport=recording,
        refresh=60.0,
        frozen=True,
        clock=lambda: scene.clock.now().replace(tzinfo=UTC),
    )
    return app, recording


def shown(app: ConsoleApp) -> list[str]:
    return app.screen.query_one("#tokens", TokenList).keys


def filters(app: ConsoleApp) -> str:
    return str(app.screen.query_one("#filters", Static).render())


def tokens_screen(app: ConsoleApp) -> TokensScreen:
    screen = app.screen
    assert isinstance(screen, TokensScreen)
    return screen


async def test_the_first_poll_asks_one_page_of_100_and_says_more_follow(scene: Scene) -> None:
    app, recording = console(scene)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: len(shown(app)) == 100)
        await settle(pilot)
        assert shown(app) == ids(250, 151)
        # One request of 100 tokens, none after it, and one of 100 inbox entries.
        assert recording.asked("/tokens") == [{"limit": ["100"]}]
        assert recording.asked("/inbox") == [{"limit": ["100"]}]
        assert "100 of the 100 most recently moved, more below" in filters(app)
        assert tokens_screen(app).next_page is not None


async def test_the_cursor_on_the_last_row_loads_the_next_page_and_a_poll_keeps_them(
    scene: Scene,
) -> None:
    app, recording = console(scene)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: len(shown(app)) == 100)
        await settle(pilot)
        app.screen.query_one("#tokens", TokenList).focus()
        await pilot.press("end")  # the last loaded row: T-151
        await wait_for(pilot, lambda: len(shown(app)) == 200)
        assert shown(app) == ids(250, 51)
        second = recording.asked("/tokens")[-1]
        assert second["limit"] == ["100"] and len(second["after"]) == 1
        assert app.screen.query_one("#tokens", TokenList).cursor_key == "T-151"
        assert "200 of the 200 most recently moved, more below" in filters(app)
        # pagedown onto the last row loads the last page: 50 tokens, no more below.
        await pilot.press("end", "pagedown")
        await wait_for(pilot, lambda: len(shown(app)) == TOKENS)
        await settle(pilot)
        assert shown(app) == ids(250, 1)
        assert tokens_screen(app).next_page is None
        assert "250 of the 250 most recently moved" in filters(app)
        assert "more below" not in filters(app)
        # At the end with nothing more, the keys ask nothing.
        before = len(recording.asked("/tokens"))
        await pilot.press("end", "down")
        await settle(pilot)
        assert len(recording.asked("/tokens")) == before
        # A poll asks again for every loaded row, in pages of 100, and keeps them shown.
        tokens_screen(app).refresh_now()
        await settle(pilot)
        polled = recording.asked("/tokens")[before:]
        assert [q["limit"] for q in polled] == [["100"]] * 3
        assert "after" not in polled[0] and all("after" in q for q in polled[1:])
        assert shown(app) == ids(250, 1)


async def test_a_filter_asks_again_from_the_first_page_with_the_prefix(scene: Scene) -> None:
    app, recording = console(scene)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: len(shown(app)) == 100)
        app.screen.query_one("#tokens", TokenList).focus()
        await pilot.press("end")
        await wait_for(pilot, lambda: len(shown(app)) == 200)
        await pilot.press("slash", *"T-0")
        # T-099 to T-001 are older than the 200 loaded: the control plane finds them.
        await wait_for(pilot, lambda: shown(app) == ids(99, 1))
        await settle(pilot)
        last = recording.asked("/tokens")[-1]
        assert last == {"limit": ["100"], "prefix": ["T-0"]}
        assert "99 of the 99 most recently moved" in filters(app)
        assert "more below" not in filters(app)
        assert tokens_screen(app).pages == 1


async def test_the_header_counts_the_inbox_as_100_plus_past_one_page(scene: Scene) -> None:
    app, _ = console(scene)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: "inbox" in str(app.screen.query_one(StatusBar).render()))
        assert "inbox 100+" in str(app.screen.query_one(StatusBar).render())
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, InboxScreen))
        await settle(pilot)
        hint = str(app.screen.query_one("#inbox-hint", Static).render())
        assert "the 100 longest waiting shown; more wait (inbox 100+)" in hint
