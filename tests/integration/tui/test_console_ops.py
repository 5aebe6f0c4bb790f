"""The console's view of the supervisors' registry and the inbox against the real API (SQLite, a
fake clock on both sides): the registry on `o`, `no supervisor` in the states panel and the
header, the `i` inbox and its fire form; Pilot tests and SVG snapshots.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static
from textual.worker import WorkerCancelled

from stateous.control.clock import FakeClock
from stateous.tui.app import ConsoleApp, make_console
from stateous.tui.screens.fire import FireScreen
from stateous.tui.screens.inbox import InboxScreen
from stateous.tui.widgets import StatusBar
from stateous.tui.widgets.states import StatesPanel
from tests.support import sqlite_url
from tests.support.app import RunningApi, running_api
from tests.support.graphs import ORDERS
from tests.unit.tui.helpers import plain, wait_for

Snap = Callable[..., bool]
BOX = "box-1"
SHOWN_URL = "http://control-plane.test:8080"


class ToRealApi(httpx.AsyncBaseTransport):
    """Sends each request to the real API's socket, so the console shows a fixed URL (the
    snapshots must not carry the free port)."""

    def __init__(self, url: str) -> None:
        self.target = httpx.URL(url)
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(host=self.target.host, port=self.target.port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def settle(pilot: Pilot[Any]) -> None:
    """Let every worker finish and the screen redraw. Over a real socket a poll may still be in
    flight when the next one starts and cancels it (exclusive workers): that is not a failure."""
    for _ in range(3):
        for _ in range(10):
            try:
                await pilot.app.workers.wait_for_complete()
                break
            except WorkerCancelled:
                await pilot.pause(0.01)
        await pilot.pause()


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is UTC here, so the times on screen are the same everywhere."""
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.delenv("STATEOUS_SUPERVISOR_STALE_SECONDS", raising=False)
    monkeypatch.delenv("STATEOUS_SUPERVISOR_GONE_SECONDS", raising=False)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


class Scene:
    """The API on a fake clock, with helpers that act as supervisors and operators would."""

    def __init__(self, api: RunningApi, clock: FakeClock) -> None:
        self.api = api
        self.clock = clock
        self.http = httpx.Client(base_url=api.url, timeout=30)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        answer = self.http.post(path, json=body)
        assert answer.status_code in (200, 201, 204), answer.text
        return answer.json() if answer.content else None

    def beat(self, name: str, states: list[str], running: list[int], **extra: Any) -> None:
        self.post("/supervisors/beat", {
            "supervisor": name, "host": f"{name}.example", "pid": 4242, "version": "0.1.0",
            "states": states, "slots": 4, "running": running,
            "started_at": "2026-10-16T20:40:00Z", **extra,
        })  # fmt: skip

    def console(self) -> ConsoleApp:
        return make_console(
            SHOWN_URL,
            transport=ToRealApi(self.api.url),
            refresh=60.0,
            frozen=True,
            clock=lambda: self.clock.now().replace(tzinfo=UTC),
        )


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    """Four orders: ORDER-1 waits in draft with a question, ORDER-2 waits paused, ORDER-3 and
    ORDER-4 are queued in review; box-1 (draft) is live, box-2 (review) stale, box-3 gone."""
    clock = FakeClock()
    with running_api(sqlite_url(tmp_path), ORDERS, clock) as api:
        scene = Scene(api, clock)
        for token in ("ORDER-1", "ORDER-2", "ORDER-3", "ORDER-4"):
            scene.post("/tokens", {"token": token, "context": {"title": f"order {token}"}})
        scene.beat("box-2", ["review"], [])
        scene.beat("box-3", ["draft", "review"], [], stopping=True)
        clock.advance(15)
        grants = [scene.post("/tasks/claim", {"supervisor": BOX, "states": ["draft"]})
                  for _ in range(4)]  # fmt: skip
        for grant in grants[2:]:
            scene.post(f"/tasks/{grant['task']}/report",
                       {"kind": "event", "event": "submitted", "supervisor": BOX})  # fmt: skip
        scene.post(f"/tasks/{grants[0]['task']}/note", {"text": "which size, S or M?"})
        scene.post(f"/tasks/{grants[0]['task']}/report", {"kind": "waiting", "supervisor": BOX})
        clock.advance(20)
        scene.post(f"/tasks/{grants[1]['task']}/report", {"kind": "waiting", "supervisor": BOX})
        scene.post("/tokens/ORDER-2/pause", {})
        clock.advance(10)
        scene.beat(BOX, ["draft"], [])
        clock.advance(5)  # box-2 last beat 35 s ago: stale
        yield scene
        scene.http.close()


def header(app: ConsoleApp) -> str:
    return str(app.screen.query_one(StatusBar).render())


async def test_the_header_and_the_states_panel_mark_a_state_without_a_live_supervisor(
    scene: Scene,
) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        checksum = str((app.health or {}).get("checksum"))[:15]
        assert header(app) == (
            f"{SHOWN_URL}  orders {checksum}  ● connected  ⚠ no supervisor for review\n"
            "active 3  paused 1  completed 0  failed 0  cancelled 0  inbox 2"
        )
        panel = app.screen.query_one(StatesPanel)
        assert [plain(panel.get_row(key)) for key in ("draft", "review")] == [
            ["draft", "1", "1", "0"],
            ["review\nno supervisor", "2", "0", "2"],
        ]
        # box-2 beats again: review is served, the marks go.
        scene.beat("box-2", ["review"], [])
        app.poll_plane()
        await settle(pilot)
        await wait_for(pilot, lambda: "no supervisor" not in header(app))
        assert plain(panel.get_row("review")) == ["review", "2", "0", "2"]


async def test_the_supervisors_screen_lists_the_registry_first(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        await pilot.press("o")
        await settle(pilot)
        table = app.screen.query_one("#registry", DataTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        rows = [plain(table.get_row_at(n)) for n in range(3)]
        assert rows == [
            ["box-1", "box-1.example", "live", "5s ago", "draft", "0/4", "-"],
            ["box-2", "box-2.example", "stale", "50s ago", "review", "0/4", "-"],
            ["box-3", "box-3.example", "gone", "50s ago", "draft, review", "0/4", "-"],
        ]  # none of them named the version it serves
        hint = str(app.screen.query_one(".hint", Static).render())
        assert hint.startswith("No supervisor folder is shown.")


async def test_the_inbox_screen_and_its_fire_form(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)
        assert isinstance(app.screen, InboxScreen)
        table = app.screen.query_one("#inbox", DataTable)
        assert [plain(table.get_row_at(n)) for n in range(table.row_count)] == [
            ["ORDER-1", "draft", "35s", "2026-10-16 20:48:59", "which size, S or M?",
             "submitted"],
            ["ORDER-2 paused", "draft", "15s", "2026-10-16 20:49:19", "-", "submitted"],
        ]  # fmt: skip
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, FireScreen))
        form = app.screen
        assert isinstance(form, FireScreen)
        assert form.token["token"] == "ORDER-1"
        await pilot.press("ctrl+s")
        await settle(pilot)
        await wait_for(pilot, lambda: isinstance(app.screen, InboxScreen))
        await wait_for(pilot, lambda: table.row_count == 1)
        assert plain(table.get_row_at(0))[0] == "ORDER-2 paused"
        assert header(app).endswith("inbox 1")
        token = scene.http.get("/tokens/ORDER-1").json()
        assert (token["state"], token["status"]) == ("review", "active")


async def test_an_empty_inbox_says_so(tmp_path: Path) -> None:
    clock = FakeClock()
    with running_api(sqlite_url(tmp_path), ORDERS, clock) as api:
        app = Scene(api, clock).console()
        async with app.run_test(size=(100, 20)) as pilot:
            await settle(pilot)
            await pilot.press("i")
            await settle(pilot)
            hint = str(app.screen.query_one("#inbox-hint", Static).render())
            assert hint == "No token waits for a person."
            assert header(app).endswith("inbox 0")


async def test_the_inbox_answer_takes_a_reason(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30 item 5: the fire form (the inbox's answer) has a reason field, as every operator's
    act may carry one; `enter` in it sends, as `ctrl+s` does."""
    monkeypatch.setenv("STATEOUS_ACTOR", "alice")
    app = scene.console()
    async with app.run_test(size=(130, 34)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, FireScreen))
        form = app.screen
        form.query_one("#reason", Input).focus()
        await pilot.press(*"size M, as the customer said", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, InboxScreen))
        await settle(pilot)
    rows = scene.http.get("/tokens/ORDER-1/history").json()
    accepted = [r["data"] for r in rows if r["kind"] == "event_accepted" and "by" in r["data"]]
    assert [(d["event"], d["by"]) for d in accepted] == [
        (
            "submitted",
            {"actor": "alice", "reason": "size M, as the customer said", "via": "console"},
        )
    ]


async def test_the_leases_screen_lists_the_registry_and_the_queue(scene: Scene) -> None:
    """box-1 holds ORDER-1's and ORDER-2's waiting tasks (no lease, so no renewal), box-2 is
    stale and holds nothing, box-3 is gone; review has the two queued tasks of ORDER-3 and 4."""
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        held = app.screen.query_one("#held", DataTable)
        await wait_for(pilot, lambda: held.row_count == 2)
        assert [plain(held.get_row_at(n)) for n in range(2)] == [
            ["1", "ORDER-1", "draft", "1", "waiting", "box-1", "-", "35s ago"],
            ["2", "ORDER-2", "draft", "1", "waiting", "box-1", "-", "35s ago"],
        ]
        supervisors = app.screen.query_one("#supervisors", DataTable)
        assert [plain(supervisors.get_row_at(n)) for n in range(supervisors.row_count)] == [
            ["box-1", "live", "2", "-"],
            ["box-2", "stale", "0", "-"],
        ]
        queued = app.screen.query_one("#queued", DataTable)
        assert [plain(queued.get_row_at(n)) for n in range(queued.row_count)] == [
            ["review", "2", "35s"],
        ]
        assert not app.screen.query_one("#queued-panel").has_class("-empty")


async def test_an_empty_leases_screen_says_so(tmp_path: Path) -> None:
    clock = FakeClock()
    with running_api(sqlite_url(tmp_path), ORDERS, clock) as api:
        app = Scene(api, clock).console()
        async with app.run_test(size=(100, 20)) as pilot:
            await settle(pilot)
            await pilot.press("l")
            await settle(pilot)
            screen = app.screen
            await wait_for(pilot, lambda: screen.query_one("#queued-panel").has_class("-empty"))
            lines = [
                str(screen.query_one(f"{panel} .empty", Static).render())
                for panel in ("#supervisors-panel", "#queued-panel")
            ]
            hint = str(screen.query_one("#held-hint", Static).render())
    assert lines == [
        "No supervisor holds a task, and none is registered.",
        "No task is queued: the supervisors keep up.",
    ]
    assert hint == "No task is held: no supervisor is running a routine."


def test_snapshot_leases(snap_compare: Snap, scene: Scene) -> None:
    async def leases(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)

    assert snap_compare(scene.console(), terminal_size=(110, 24), run_before=leases)


def test_snapshot_empty_leases(snap_compare: Snap, tmp_path: Path) -> None:
    clock = FakeClock()
    with running_api(sqlite_url(tmp_path), ORDERS, clock) as api:

        async def leases(pilot: Pilot[Any]) -> None:
            await settle(pilot)
            await pilot.press("l")
            await settle(pilot)

        app = Scene(api, clock).console()
        assert snap_compare(app, terminal_size=(110, 16), run_before=leases)


def test_snapshot_tokens_with_no_supervisor(snap_compare: Snap, scene: Scene) -> None:
    assert snap_compare(scene.console(), terminal_size=(110, 24), run_before=settle)


def test_snapshot_supervisors(snap_compare: Snap, scene: Scene) -> None:
    async def supervisors(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("o")
        await settle(pilot)

    assert snap_compare(scene.console(), terminal_size=(110, 24), run_before=supervisors)


def test_snapshot_inbox(snap_compare: Snap, scene: Scene) -> None:
    async def inbox(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)

    assert snap_compare(scene.console(), terminal_size=(110, 24), run_before=inbox)
