"""The console against a real `stateous serve` and a real `stateous supervise`.

One control plane (SQLite) and one supervisor serve the whole module; the supervisor works only
`draft`, so tokens wait in `review` where the console steers them. The outbox test and the
unreachable test run their own processes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.widgets import DataTable, Input, RichLog, TextArea

from stateous.model.history import history_line
from stateous.tui.app import ConsoleApp, make_console
from stateous.tui.screens.confirm import ConfirmScreen
from stateous.tui.screens.fire import FireScreen
from stateous.tui.screens.leases import LeasesScreen
from stateous.tui.screens.outboxes import OutboxesScreen
from stateous.tui.screens.start import StartScreen
from stateous.tui.screens.token import TokenScreen
from stateous.tui.widgets import Banner
from stateous.tui.widgets.token_list import TokenList
from tests.faults.proxy import ChaosProxy
from tests.integration.supervisor.procs import init_folder, wait_until
from tests.support import (
    ServeProcess,
    Supervise,
    free_port,
    serve_process,
    sqlite_url,
    start_supervise,
)
from tests.support.graphs import ORDERS, write_graph
from tests.unit.tui.helpers import notes, plain, settle, wait_for

ROUTINES = """
import time

from stateous import on_state

from contract import ItemContext, events, states


@on_state(states.draft)
def draft(ctx: ItemContext) -> events.submitted:
    ctx.note("drafting " + ctx["title"])
    if ctx["title"] == "slow":
        time.sleep(4)
    return events.submitted()
"""


class Live:
    """The module's control plane and supervisor."""

    def __init__(self, plane: ServeProcess, folder: Path, supervisor: Supervise) -> None:
        self.plane = plane
        self.url = plane.url
        self.folder = folder
        self.supervisor = supervisor

    def start(self, token: str, title: str = "an order") -> None:
        answer = httpx.post(
            f"{self.url}/tokens", json={"token": token, "context": {"title": title}}
        )
        assert answer.status_code == 201, answer.text

    def token(self, token: str) -> dict[str, Any]:
        return dict(httpx.get(f"{self.url}/tokens/{token}", timeout=10).json())

    def wait_state(self, token: str, state: str) -> None:
        wait_until(lambda: self.token(token)["state"] == state, what=f"{token} in {state}")


def make_folder(root: Path, url: str, name: str) -> Path:
    folder = root / name
    init_folder(url, folder)
    (folder / "routines.py").write_text(ROUTINES, encoding="utf-8")
    (folder / "stateous.yaml").write_text(f"url: {url}\ntasks: 4\nname: {name}\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("live")
    graph = write_graph(root, ORDERS)
    with serve_process(graph, sqlite_url(root)) as plane:
        folder = make_folder(root, plane.url, "build-box-1")
        supervisor = start_supervise(folder)
        try:
            supervisor.wait_for("serves")
            yield Live(plane, folder, supervisor)
        finally:
            supervisor.stop()


def console(live: Live, tmp_path: Path, **options: Any) -> ConsoleApp:
    options.setdefault("refresh", 0.3)
    return make_console(live.url, settings_file=tmp_path / "console.yaml", **options)


def rows(app: ConsoleApp, table: str) -> dict[str, list[str]]:
    if table == "tokens":
        tokens = app.screen.query_one("#tokens", TokenList)
        return {key: plain(cells) for key, cells in tokens.rows}
    found = app.screen.query_one(f"#{table}", DataTable)
    return {str(r.value): plain(found.get_row(str(r.value))) for r in found.rows}


async def select(app: ConsoleApp, pilot: Any, token: str) -> None:
    await wait_for(pilot, lambda: token in rows(app, "tokens"))
    tokens = app.screen.query_one("#tokens", TokenList)
    tokens.move_to(token)
    tokens.focus()


async def test_list_filter_open_and_watch_the_history_grow(live: Live, tmp_path: Path) -> None:
    live.start("LIVE-1")
    app = console(live, tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(app, pilot, "LIVE-1")
        await pilot.press("1")
        await wait_for(pilot, lambda: app.screen.status_filter == "active")  # type: ignore[attr-defined]
        await pilot.press("slash", *"LIVE-1")
        await wait_for(pilot, lambda: list(rows(app, "tokens")) == ["LIVE-1"])
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TokenScreen))
        live.wait_state("LIVE-1", "review")
        entries = httpx.get(f"{live.url}/tokens/LIVE-1/history").json()
        last = entries[-1]["seq"]
        await wait_for(pilot, lambda: app.screen.last_seq == last, timeout=10)  # type: ignore[attr-defined]
        log = [s.text for s in app.screen.query_one("#history", RichLog).lines]
        assert log == [str(history_line(e)) for e in entries]
        texts = [line.split("  ", 2)[2] for line in log]
        assert texts[:5] == [
            "started",
            "__started__ in START",
            "entered draft",
            "task 1 queued for draft",
            "build-box-1 took task 1 (attempt 1)",
        ]
        assert "drafting an order" in texts
        assert "submitted in draft" in texts


async def test_pause_resume_cancel_and_a_refusal(live: Live, tmp_path: Path) -> None:
    live.start("LIVE-2")
    live.wait_state("LIVE-2", "review")
    app = console(live, tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(app, pilot, "LIVE-2")
        await pilot.press("p")
        await wait_for(pilot, lambda: live.token("LIVE-2")["status"] == "paused")
        await wait_for(pilot, lambda: rows(app, "tokens")["LIVE-2"][3] == "paused")
        await pilot.press("r")
        await wait_for(pilot, lambda: live.token("LIVE-2")["status"] == "active")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: live.token("LIVE-2")["status"] == "cancelled")
        await wait_for(pilot, lambda: rows(app, "tokens").get("LIVE-2", [""] * 4)[3] == "cancelled")
        await pilot.press("r")
        sentence = (
            "token_not_active: token 'LIVE-2' is cancelled; only a paused token can be resumed"
        )
        await wait_for(pilot, lambda: sentence in notes(pilot))


async def test_fire_with_a_payload_and_start_a_token(live: Live, tmp_path: Path) -> None:
    live.start("LIVE-3")
    live.wait_state("LIVE-3", "review")
    app = console(live, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await select(app, pilot, "LIVE-3")
        await pilot.press("enter")
        await wait_for(pilot, lambda: getattr(app.screen, "token", None) is not None)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FireScreen))
        app.screen.query_one(TextArea).text = '{"approved": true, "note": "fine"}'
        app.screen.query_one(Input).value = "LIVE-3-key"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: live.token("LIVE-3")["status"] == "completed")
        await wait_for(pilot, lambda: isinstance(app.screen, TokenScreen))
        await wait_for(
            pilot,
            lambda: any(
                'reviewed in review: {"approved": true, "note": "fine"}' in s.text
                for s in app.screen.query_one("#history", RichLog).lines
            ),
        )
        await pilot.press("escape")
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen))
        app.screen.query_one(Input).value = "LIVE-4"
        app.screen.query_one(TextArea).text = '{"title": "from the console"}'
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "LIVE-4: draft, active" in notes(pilot))
        live.wait_state("LIVE-4", "review")
        assert live.token("LIVE-4")["context"] == {"title": "from the console", "verdict": None}


async def test_leases_and_a_running_supervisor(live: Live, tmp_path: Path) -> None:
    app = console(live, tmp_path, supervisors=[str(live.folder)])
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LeasesScreen))
        # Started once the screen shows: its lease lasts the 4 s of the slow routine, and a
        # loaded machine may take longer than that to start the console.
        live.start("LIVE-5", title="slow")
        await wait_for(
            pilot, lambda: any(r[1] == "LIVE-5" for r in rows(app, "held").values()), timeout=20
        )
        held = next(r for r in rows(app, "held").values() if r[1] == "LIVE-5")
        assert held[2:6] == ["draft", "1", "claimed", "build-box-1"]
        assert held[6].endswith(("1m 59s", "1m 58s", "2m", "1m 57s"))
        assert "build-box-1" in rows(app, "supervisors")
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, OutboxesScreen))
        await wait_for(pilot, lambda: bool(app.screen.views) and bool(app.screen.views[0].grants))  # type: ignore[attr-defined]
        folder_row = rows(app, "folders")[str(live.folder)]
        assert folder_row[:2] == ["build-box-1", "runs"]
        assert [r[1] for r in rows(app, "grants").values()] == ["LIVE-5"]


async def test_outbox_with_a_message_left_in_it(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with serve_process(graph, sqlite_url(tmp_path)) as plane:
        folder = make_folder(tmp_path, plane.url, "crashing-box")
        crashed = start_supervise(folder, env={"STATEOUS_DEBUG_POINT": "after_outbox_commit:note"})
        crashed.wait_for("serves")
        httpx.post(f"{plane.url}/tokens", json={"token": "LEFT-1", "context": {"title": "t"}})
        assert crashed.process.wait(timeout=20) == -9
        app = make_console(
            plane.url,
            supervisors=[str(folder)],
            refresh=0.3,
            settings_file=tmp_path / "console.yaml",
        )
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("o")
            await wait_for(pilot, lambda: bool(getattr(app.screen, "views", None)))
            await settle(pilot)
            assert rows(app, "folders")[str(folder)][:2] == ["crashing-box", "stopped"]
            messages = list(rows(app, "messages").values())
            assert [m[:5] for m in messages] == [["1", "note", "1", "1", "LEFT-1"]]
            assert messages[0][6] == "note: drafting t"
            body = json.loads((folder / ".stateous" / "status.json").read_text())
            assert body["name"] == "crashing-box"


async def test_unreachable_then_the_control_plane_comes(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    app = make_console(url, refresh=0.3, settings_file=tmp_path / "console.yaml")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.unreachable is not None)
        banner = str(app.screen.query_one(Banner).render())
        assert banner.startswith(f"cannot reach {url}: ") and banner.endswith("; retrying")
        graph = write_graph(tmp_path, ORDERS)
        with serve_process(graph, sqlite_url(tmp_path), listen=f"127.0.0.1:{port}"):
            await wait_for(
                pilot, lambda: app.unreachable is None and app.health is not None, timeout=20
            )
            assert not app.screen.query_one(Banner).display
            assert app.health is not None
            assert app.health == {
                "workflow": "orders",
                "checksum": app.health["checksum"],
                "role": "holder",
            }


async def test_quitting_while_a_poll_is_in_flight(live: Live, tmp_path: Path) -> None:
    # Every chunk of every answer waits up to 0.2 s on its way back, so the console's poll is
    # nearly always waiting on the control plane when it quits. Its connections close only after
    # every worker stopped: a poll left running would send on the closed client (WorkerFailed).
    port = int(live.url.rsplit(":", 1)[1])
    proxy = ChaosProxy(port, drop=0.0, delay=1.0, cut=0.0, max_delay=0.2, every=10**9)
    proxy.start()
    try:
        running = [await quit_polling(f"http://127.0.0.1:{proxy.port}", tmp_path) for _ in range(5)]
    finally:
        proxy.close()
    assert running == [[]] * 5


async def quit_polling(url: str, tmp_path: Path) -> list[str]:
    """Run a console until its first poll answered, then quit it; answer the workers that were
    still running when its connections closed."""
    app = make_console(url, refresh=0.4, settings_file=tmp_path / "console.yaml")
    running: list[str] = []
    close = app.plane.close

    async def closing() -> None:
        running.extend(worker.name for worker in app.workers if not worker.is_finished)
        await close()

    app.plane.close = closing  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.health is not None, timeout=20)
        await pilot.pause(0.1)
    assert app.return_code in (None, 0)
    return running
