"""No key ends the console: every binding of every screen, pressed on tokens of two versions, with
an `operate` token and with a `read` one, against the real API (SQLite, a fake clock). Then what
a token of an older version gets: the fire form (from the token and from the inbox) and the move
list of its own version, the states panel with its version's states, the token line with the
CLI's version note, the supervisors with the version each serves; and an unexpected error is
shown, logged, and survived."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, OptionList, Select, Static
from textual.worker import WorkerState

from stateous.control.clock import FakeClock
from stateous.model.auth import Grant
from stateous.model.canonical import checksum
from stateous.tui.app import ConsoleApp
from stateous.tui.screens.fire import FireScreen
from stateous.tui.screens.inbox import InboxScreen
from stateous.tui.screens.repair import MoveScreen
from stateous.tui.screens.token import TokenScreen
from stateous.tui.screens.tokens import TokensScreen
from stateous.tui.unexpected import TITLE
from stateous.tui.widgets.states import StatesPanel
from stateous.tui.widgets.token_list import TokenList
from tests.integration.tui.test_console_ops import Scene, settle
from tests.integration.tui.test_versions_console import NEWER, highlight
from tests.support import sqlite_url
from tests.support.app import running_api
from tests.support.graphs import ORDERS
from tests.unit.tui.helpers import notes, plain, wait_for

OLD, NEW = checksum(ORDERS)[7:15], checksum(NEWER)[7:15]
GRANTS = {"boss-token": Grant("boss", "admin"), "viewer-token": Grant("viewer", "read")}
BOSS = {"Authorization": "Bearer boss-token"}
SCREENS = ("tokens", "leases", "outboxes", "inbox", "bulk", "schedules")
ACTING = frozenset({"p", "r", "c", "f", "s", "R", "m", "M", "enter"})
"""The keys that act on a token or open its form, and enter (the inbox's answer)."""
Keys = frozenset[str] | None
NOT_PRESSED = frozenset({"q", "ctrl+q", "ctrl+c"})
"""The keys that end the console on purpose."""


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    """ORDER-1 (draft) and ORDER-2 (review, waiting for a person) on ORDERS; then NEWER served,
    which has no `review`, with ORDER-3 (draft) and box-1 serving it."""
    clock = FakeClock()
    db = sqlite_url(tmp_path)
    with running_api(db, ORDERS, clock, auth_grants=GRANTS) as api:
        old = Scene(api, clock)
        old.http.headers.update(BOSS)
        for number in (1, 2):
            old.post("/tokens", {"token": f"ORDER-{number}", "context": {"title": "t"}})
        old.post("/tokens/ORDER-2/move", {"to": "review"})
        old.beat("box-0", ["review"], [])  # a supervisor of before versions: it names none
        grant = old.post("/tasks/claim", {"supervisor": "box-0", "states": ["review"]})
        old.post(f"/tasks/{grant['task']}/note", {"text": "approve it?"})
        old.post(f"/tasks/{grant['task']}/report", {"kind": "waiting", "supervisor": "box-0"})
        old.http.close()
    clock.advance(5)
    with running_api(db, NEWER, clock, auth_grants=GRANTS) as api:
        scene = Scene(api, clock)
        scene.http.headers.update(BOSS)
        scene.post("/tokens", {"token": "ORDER-3", "context": {"title": "t"}})
        scene.beat("box-1", ["draft", "checking"], [], checksum=checksum(NEWER))
        clock.advance(5)
        yield scene
        scene.http.close()


def console(scene: Scene, monkeypatch: pytest.MonkeyPatch, token: str) -> ConsoleApp:
    """A console whose bearer token is `token` (the console reads it as it starts)."""
    monkeypatch.setenv("STATEOUS_AUTH_TOKEN", token)
    return scene.console()


async def calm(pilot: Pilot[Any]) -> None:
    """Pause until no worker runs, or a modal is shown (a worker may wait on its answer), or a
    second passed."""
    app = pilot.app
    for _ in range(50):
        await pilot.pause(0.02)
        busy = [w for w in app.workers if w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
        if not busy or isinstance(app.screen, ModalScreen):
            return


def unexpected(app: ConsoleApp) -> list[str]:
    """The unexpected errors the console showed."""
    return [n.message for n in app._notifications if n.title == TITLE]


def keys_of(screen: Screen[Any]) -> list[str]:
    """Every key bound on `screen` (its own, its focused widget's, the app's), each once."""
    keys: list[str] = []
    for key, active in screen.active_bindings.items():
        if key not in NOT_PRESSED and key not in keys and active.enabled:
            keys.append(key)
    return keys


async def back_to(pilot: Pilot[Any], screen: Screen[Any], where: str, token: str | None) -> None:
    """Close what a key opened (escape answers every modal with no), then show `screen` (the
    main screen `where`, or a token's) again, the cursor on `token`."""
    app = pilot.app
    for _ in range(6):
        if app.screen is screen or not app.is_running:
            break
        await pilot.press("escape")
        await calm(pilot)
    if app.screen is not screen:
        if isinstance(screen, TokenScreen):
            app.open_token(screen.token_id)  # type: ignore[attr-defined]  # the console app
        elif where == "versions":
            app.action_versions()  # type: ignore[attr-defined]  # the console app
        else:
            app.action_show(where)  # type: ignore[attr-defined]  # the console app
        await calm(pilot)
    if token is not None and isinstance(app.screen, TokensScreen):
        app.screen.action_clear()
        app.screen.query_one("#tokens", TokenList).move_to(token)
        await pilot.pause()


async def walk(
    pilot: Pilot[Any],
    where: str,
    token: str | None,
    found: list[str],
    only: frozenset[str] | None = None,
) -> None:
    """Press every key of the screen shown (or those of `only`), one at a time from the same
    place; note each key after which the console ended or showed an unexpected error."""
    app = pilot.app
    screen = app.screen
    await back_to(pilot, screen, where, token)
    for key in keys_of(screen):
        if only is not None and key not in only:
            continue
        seen = len(unexpected(app))  # type: ignore[arg-type]  # the console app
        await pilot.press(key)
        await calm(pilot)
        if not app.is_running or app.return_code is not None:
            found.append(f"{where} {token} {key}: the console ended")
            return
        errors = unexpected(app)[seen:]  # type: ignore[arg-type]  # the console app
        if errors:
            found.append(f"{where} {token} {key}: {errors}")
        await back_to(pilot, screen, where, token)


async def walk_everything(pilot: Pilot[Any], found: list[str], only: Keys = None) -> None:
    """The tokens screen on each token and each token's screen, then every other screen and the
    versions; `only` these keys, when given."""
    app = pilot.app
    await calm(pilot)
    for token in ("ORDER-2", "ORDER-3", "ORDER-1"):
        app.action_show("tokens")  # type: ignore[attr-defined]  # the console app
        await calm(pilot)
        await walk(pilot, "tokens", token, found, only)
        app.open_token(token)  # type: ignore[attr-defined]  # the console app
        await wait_for(pilot, lambda: isinstance(app.screen, TokenScreen))
        await calm(pilot)
        await walk(pilot, "token", None, found, only)
    for name in SCREENS[1:]:
        app.action_show(name)  # type: ignore[attr-defined]  # the console app
        await calm(pilot)
        await walk(pilot, name, None, found, only)
    app.action_versions()  # type: ignore[attr-defined]  # the console app
    await calm(pilot)
    await walk(pilot, "versions", None, found, only)


@pytest.mark.long
@pytest.mark.parametrize("token", ["boss-token", "viewer-token"])
async def test_no_key_of_any_screen_ends_the_console(
    scene: Scene, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    app = console(scene, monkeypatch, token)
    found: list[str] = []
    async with app.run_test(size=(130, 30)) as pilot:
        await walk_everything(pilot, found)
        assert app.is_running
    assert found == []


@pytest.mark.parametrize("token", ["boss-token", "viewer-token"])
async def test_no_key_that_acts_ends_the_console_on_any_token(
    scene: Scene, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    """The short form of the walk above, in the default tier: the keys that act, and enter."""
    app = console(scene, monkeypatch, token)
    found: list[str] = []
    async with app.run_test(size=(130, 30)) as pilot:
        await walk_everything(pilot, found, ACTING)
        assert app.is_running
    assert found == []


def events(form: FireScreen) -> list[str]:
    select: Select[str] = form.query_one("#event", Select)
    return [str(value) for _, value in select._options if value != Select.NULL]


async def test_f_on_a_token_of_an_older_version_offers_its_own_events(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = console(scene, monkeypatch, "boss-token")
    async with app.run_test(size=(130, 30)) as pilot:
        await highlight(pilot, "ORDER-2")
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FireScreen))
        form = app.screen
        assert isinstance(form, FireScreen)
        assert events(form) == ["reviewed"]
        assert str(form.query_one("#fields", Static).render()) == (
            'payload Verdict: approved: boolean (required); note: string (default "")'
        )
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running


async def test_enter_in_the_inbox_on_a_token_of_an_older_version_fires_its_event(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = console(scene, monkeypatch, "boss-token")
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, InboxScreen))
        await settle(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, FireScreen))
        form = app.screen
        assert isinstance(form, FireScreen)
        assert events(form) == ["reviewed"]
        form.query_one("#payload").text = '{"approved": true}'  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, InboxScreen))
        assert notes(pilot)[-1] == "ORDER-2: review, completed"
    answer = scene.http.get("/tokens/ORDER-2").json()
    assert (answer["state"], answer["status"]) == ("review", "completed")


async def test_m_on_a_token_of_an_older_version_lists_its_own_states(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = console(scene, monkeypatch, "boss-token")
    async with app.run_test(size=(130, 30)) as pilot:
        await highlight(pilot, "ORDER-2")
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, MoveScreen))
        options = app.screen.query_one("#states", OptionList)
        shown = [str(options.get_option_at_index(n).prompt) for n in range(options.option_count)]
        assert shown == ["draft", "review  (now)"]
        await pilot.press("escape")


async def test_the_states_panel_shows_the_states_of_an_older_live_version(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = console(scene, monkeypatch, "boss-token")
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(StatesPanel)
        await wait_for(pilot, lambda: panel.row_count == 3)
        assert [plain(panel.get_row(str(key.value))) for key in panel.rows] == [
            ["draft", "2", "0", "2"],
            ["checking", "0", "0", "0"],
            [f"review {OLD}", "1", "0", "0"],
        ]


async def test_the_token_line_says_the_version_as_the_cli_does(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = console(scene, monkeypatch, "boss-token")
    async with app.run_test(size=(130, 30)) as pilot:
        await highlight(pilot, "ORDER-2")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TokenScreen))
        await settle(pilot)
        line = str(app.screen.query_one("#line", Static).render())
        assert line.endswith(f" (version {OLD}; new tokens start on {NEW})")


async def test_the_supervisors_say_which_version_each_serves(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = console(scene, monkeypatch, "boss-token")
    async with app.run_test(size=(130, 30)) as pilot:
        await settle(pilot)
        await pilot.press("o")
        await settle(pilot)
        table = app.screen.query_one("#registry", DataTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        rows = {plain(table.get_row_at(n))[0]: plain(table.get_row_at(n)) for n in range(2)}
        assert rows["box-1"][-1] == f"{NEW} (current)"
        assert rows["box-0"][-1] == "-"  # it never named a version
