"""The console's versions against the real API (SQLite, a fake clock): with tokens
live on two versions the tokens screen shows a version column and the header `versions 2`; `v`
lists the versions; `M` migrates a token, or a `*` selection, to the current version after a
confirmation that shows the dry run's refusals. Pilot tests and SVG snapshots."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Label

from stateous.control.bulk_runner import BulkRunner
from stateous.control.clock import FakeClock
from stateous.model.canonical import checksum, structure
from stateous.tui.screens.confirm import ConfirmScreen
from stateous.tui.screens.token import TokenScreen
from stateous.tui.screens.tokens import TokensScreen
from stateous.tui.screens.versions import VersionsScreen
from stateous.tui.widgets.token_list import TokenList
from tests.integration.tui.test_bulk_console import answer_yes, header, select_and_ask
from tests.integration.tui.test_console_ops import Scene, settle
from tests.support import sqlite_url
from tests.support.app import running_api
from tests.support.graphs import ORDERS, variant
from tests.unit.tui.helpers import notes, plain, wait_for

Snap = Callable[..., bool]
CONSOLE_BY = {"actor": "alice", "via": "console"}


def _newer() -> dict[str, Any]:
    """ORDERS with `review` renamed `checking`: another structure, without `review`."""
    doc = variant(ORDERS)
    doc["states"] = {"draft": doc["states"]["draft"], "checking": doc["states"]["review"]}
    for transition in doc["transitions"]:
        for end in ("from", "to"):
            if transition[end] == "review":
                transition[end] = "checking"
    return doc


NEWER = _newer()
OLD_SUM, NEW_SUM = checksum(ORDERS), checksum(NEWER)
OLD, NEW = OLD_SUM[7:15], NEW_SUM[7:15]


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    """ORDER-1 (draft) and ORDER-2 (review) on ORDERS; then NEWER served, with ORDER-3."""
    monkeypatch.setenv("STATEOUS_ACTOR", "alice")
    clock = FakeClock()
    db = sqlite_url(tmp_path)
    with running_api(db, ORDERS, clock) as api:
        old = Scene(api, clock)
        for number in (1, 2):
            old.post("/tokens", {"token": f"ORDER-{number}", "context": {"title": "t"}})
        clock.advance(2)
        old.post("/tokens/ORDER-2/move", {"to": "review"})
        old.http.close()
    clock.advance(5)
    with running_api(db, NEWER, clock) as api:
        scene = Scene(api, clock)
        scene.post("/tokens", {"token": "ORDER-3", "context": {"title": "t"}})
        clock.advance(5)
        yield scene
        scene.http.close()


def on(scene: Scene, token: str) -> tuple[str, str, str]:
    found = scene.http.get(f"/tokens/{token}").json()
    return found["structure"], found["state"], found["status"]


def migrated(scene: Scene, token: str) -> list[dict[str, Any]]:
    rows = scene.http.get(f"/tokens/{token}/history").json()
    return [r["data"] for r in rows if r["kind"] == "migrated"]


async def highlight(pilot: Pilot[Any], token: str) -> TokensScreen:
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, TokensScreen)
    screen.query_one("#tokens", TokenList).move_to(token)
    await pilot.pause()
    return screen


async def ask(pilot: Pilot[Any], kind: type[Any]) -> Any:
    await pilot.press("M")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, kind))
    await pilot.pause()
    return pilot.app.screen


async def test_two_live_versions_show_the_version_column_and_the_header(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        screen = await highlight(pilot, "ORDER-1")
        tokens = screen.query_one("#tokens", TokenList)
        assert [label for label, _, _ in tokens.columns] == [
            "id", "state", "visit", "status", "in state", "version", "parent",
        ]  # fmt: skip
        assert [plain(tokens.row(key)) for key in tokens.keys] == [
            ["ORDER-3", "draft", "1", "active", "5s", NEW, ""],
            ["ORDER-2", "review", "1", "active", "10s", OLD, ""],
            ["ORDER-1", "draft", "1", "active", "12s", OLD, ""],
        ]
        assert "versions 2  inbox 0" in header(app)


async def test_one_live_version_keeps_the_screen_as_it_was(scene: Scene) -> None:
    for token in ("ORDER-1", "ORDER-2"):
        scene.post(f"/tokens/{token}/cancel", {})
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        screen = await highlight(pilot, "ORDER-3")
        tokens = screen.query_one("#tokens", TokenList)
        assert "version" not in [label for label, _, _ in tokens.columns]
        assert "versions" not in header(app)


async def test_v_lists_the_versions_and_escape_goes_back(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        screen = await highlight(pilot, "ORDER-1")
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, VersionsScreen))
        table = app.screen.query_one("#versions", DataTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        assert [plain(table.get_row_at(n)) for n in range(2)] == [
            [NEW_SUM[7:19], structure(NEWER)[7:19], "yes", "2026-10-16 20:48:51", "1"],
            [OLD_SUM[7:19], structure(ORDERS)[7:19], "no", "2026-10-16 20:48:44", "2"],
        ]
        hint = str(app.screen.query_one("#versions-hint").render())
        assert hint == (
            f"2 versions, 2 with live tokens; new tokens start on {NEW} "
            "(M on a token moves it there)"
        )
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen


async def test_m_asks_then_migrates_the_highlighted_token_with_a_reason(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        screen = await highlight(pilot, "ORDER-1")
        confirm = await ask(pilot, ConfirmScreen)
        assert str(confirm.query_one("#question", Label).render()) == (
            f"Migrate token 'ORDER-1' (in draft, version {OLD}) to {NEW}, the current version?\n"
            "It enters 'draft' again on the new version, as a new visit.\nrefused: none"
        )
        await pilot.press("n")
        await settle(pilot)
        assert on(scene, "ORDER-1")[0] == structure(ORDERS)
        await ask(pilot, ConfirmScreen)
        await pilot.press("tab", *"the fix is out", "enter")
        await settle(pilot)
        assert app.screen is screen
        assert notes(pilot)[-1] == "ORDER-1: draft (visit 2), active"
    assert on(scene, "ORDER-1") == (structure(NEWER), "draft", "active")
    assert migrated(scene, "ORDER-1") == [
        {"from": OLD_SUM, "to": NEW_SUM, "state": "draft", "into": "draft",
         "by": {**CONSOLE_BY, "reason": "the fix is out"}},
    ]  # fmt: skip
    assert scene.http.get("/bulk").json() == []


async def test_m_on_a_token_the_dry_run_refuses_asks_nothing_and_says_why(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        screen = await highlight(pilot, "ORDER-2")
        await pilot.press("M")
        await settle(pilot)
        assert app.screen is screen
        assert notes(pilot)[-1] == (
            f"unknown_state: version {NEW} has no state 'review'; map it with the CLI: "
            "stateous token migrate ORDER-2 --map review=<state>"
        )
        await highlight(pilot, "ORDER-3")
        await pilot.press("M")
        await settle(pilot)
        assert notes(pilot)[-1] == f"same_version: it runs on {NEW} already"
    assert on(scene, "ORDER-2") == (structure(ORDERS), "review", "active")
    assert migrated(scene, "ORDER-2") == []


async def test_m_on_the_token_screen_migrates_that_token(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await highlight(pilot, "ORDER-1")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TokenScreen))
        await settle(pilot)
        await ask(pilot, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, TokenScreen)
    assert on(scene, "ORDER-1") == (structure(NEWER), "draft", "active")
    assert migrated(scene, "ORDER-1")[0]["by"] == CONSOLE_BY


async def test_star_then_m_migrates_the_selection_and_skips_the_refused(scene: Scene) -> None:
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        confirm = await select_and_ask(pilot, "asterisk", "M")
        assert str(confirm.query_one("#question", Label).render()) == (
            f"migrate 3 tokens to {NEW}?\n"
            "every token where status active, paused, failed (the statuses migrate acts on)\n"
            "ORDER-1, ORDER-2, ORDER-3\n"
            "refused: 1 same_version (ORDER-3), 1 unknown_state (ORDER-2) (the job skips them)\n"
            "One bulk job acts on each, and goes on if the console closes."
        )
        await pilot.press("tab", *"roll out")
        await answer_yes(pilot, confirm)
        assert notes(pilot)[-1] == "bulk job 1: migrate 3 tokens"
    job = scene.http.get("/bulk/1").json()
    assert (job["action"], job["filter"], job["by"]) == (
        "migrate",
        {"status": ["active", "paused", "failed"]},
        {**CONSOLE_BY, "reason": "roll out"},
    )
    BulkRunner(scene.api.plane).drain()
    assert scene.http.get("/bulk/1").json()["skipped"] == {"same_version": 1, "unknown_state": 1}
    assert on(scene, "ORDER-1") == (structure(NEWER), "draft", "active")
    assert on(scene, "ORDER-2") == (structure(ORDERS), "review", "active")


async def test_star_then_m_refused_whole_asks_nothing(scene: Scene) -> None:
    scene.post("/tokens/ORDER-1/cancel", {})
    app = scene.console()
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        await pilot.press("1", "asterisk", "M")  # active only: ORDER-2 and ORDER-3
        await settle(pilot)
        assert isinstance(app.screen, TokensScreen)
        assert notes(pilot)[-1] == (
            "no token where status active can migrate: "
            "refused: 1 same_version (ORDER-3), 1 unknown_state (ORDER-2)"
        )
    assert scene.http.get("/bulk").json() == []


def test_snapshot_tokens_on_two_versions(snap_compare: Snap, scene: Scene) -> None:
    assert snap_compare(scene.console(), terminal_size=(110, 20), run_before=settle)


def test_snapshot_versions_screen(snap_compare: Snap, scene: Scene) -> None:
    async def versions(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, VersionsScreen))
        await settle(pilot)

    assert snap_compare(scene.console(), terminal_size=(110, 20), run_before=versions)


def test_snapshot_migrate_confirmation_with_refusals(snap_compare: Snap, scene: Scene) -> None:
    async def migrate(pilot: Pilot[Any]) -> None:
        await select_and_ask(pilot, "asterisk", "M")
        await pilot.press("tab", *"roll out")
        await pilot.pause()

    assert snap_compare(scene.console(), terminal_size=(110, 30), run_before=migrate)
