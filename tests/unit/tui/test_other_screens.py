"""Leases, supervisors and outboxes, the unreachable banner, settings, help and the palette."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from stateous.tui.app import ConsoleApp, make_console
from stateous.tui.outbox import read_folder
from stateous.tui.screens.help import HelpScreen
from stateous.tui.screens.leases import LeasesScreen
from stateous.tui.screens.outboxes import OutboxesScreen
from stateous.tui.settings import Settings, load_settings, save_settings
from stateous.tui.widgets import Banner
from tests.support import free_port
from tests.unit.tui.helpers import notes, plain, settle, wait_for


async def test_leases_sorted_by_lease_remaining_with_supervisors_and_queue(
    console: Callable[..., ConsoleApp],
) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        assert isinstance(app.screen, LeasesScreen)
        held = app.screen.query_one("#held", DataTable)
        assert [plain(held.get_row(str(r.value))) for r in held.rows] == [
            [
                "5",
                "ORDER-3.checks.1.stock",
                "stock/count",
                "1",
                "claimed",
                "build-box-2",
                "██░░░░░░ 25s",
                "?",
            ],
            ["4", "ORDER-2", "draft", "2", "claimed", "build-box-1", "███░░░░░ 50s", "?"],
            ["2", "ORDER-1", "review", "1", "claimed", "build-box-1", "█████░░░ 1m 10s", "29s ago"],
            ["8", "ORDER-9", "review", "1", "waiting", "build-box-2", "-", "?"],
        ]
        supervisors = app.screen.query_one("#supervisors", DataTable)
        # No registry here (the recorded plane predates the supervisors' beat): the held tasks tell,
        # the waiting task 8 counting for build-box-2 though its lease tells no renewal.
        assert [plain(supervisors.get_row(str(r.value))) for r in supervisors.rows] == [
            ["build-box-1", "-", "2", "50s ago"],
            ["build-box-2", "-", "2", "1m 35s ago"],
        ]
        queued = app.screen.query_one("#queued", DataTable)
        assert [plain(queued.get_row(str(r.value))) for r in queued.rows] == [["draft", "1", "50s"]]


def write_folder(folder: Path, *, status: dict[str, object] | None = None) -> None:
    """A supervisor folder with an outbox holding two messages, one of them stale."""
    (folder / ".stateous").mkdir(parents=True)
    (folder / "stateous.yaml").write_text(
        'url: "http://127.0.0.1:8080"    # the control plane\ntasks: 4\nname: build-box-1\n',
        encoding="utf-8",
    )
    conn = sqlite3.connect(folder / ".stateous" / "outbox.db")
    conn.execute(
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, task INTEGER NOT NULL,"
        " attempt INTEGER NOT NULL, token TEXT NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL,"
        " created_at TEXT NOT NULL)"
    )
    rows = [
        (
            2,
            1,
            "ORDER-1",
            "report",
            json.dumps(
                {
                    "kind": "event",
                    "event": "reviewed",
                    "payload": {"approved": True},
                    "context": None,
                    "schedules": [],
                    "attempt": 1,
                }
            ),
            "2026-10-16T20:58:30.000000+00:00",
        ),
        (
            2,
            1,
            "ORDER-1",
            "note",
            json.dumps({"text": "asked the reviewer"}),
            "2026-10-16T20:59:50.000000+00:00",
        ),
    ]
    conn.executemany(
        "INSERT INTO messages (task, attempt, token, kind, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.commit()
    conn.close()
    if status is not None:
        (folder / ".stateous" / "status.json").write_text(json.dumps(status), encoding="utf-8")


def test_read_folder_reads_the_outbox_read_only(tmp_path: Path) -> None:
    write_folder(tmp_path / "sup")
    before = (tmp_path / "sup" / ".stateous" / "outbox.db").read_bytes()
    view = read_folder(str(tmp_path / "sup"))
    assert (view.name, view.url, view.running, view.problems) == (
        "build-box-1",
        "http://127.0.0.1:8080",
        False,
        (),
    )
    assert [(m.id, m.kind, m.summary) for m in view.messages] == [
        (1, "report", "event reviewed"),
        (2, "note", "note: asked the reviewer"),
    ]
    assert (tmp_path / "sup" / ".stateous" / "outbox.db").read_bytes() == before


def test_a_locked_outbox_means_the_supervisor_runs(tmp_path: Path) -> None:
    write_folder(tmp_path / "sup", status={"name": "build-box-1", "pid": 0, "outbox": 3})
    holder = sqlite3.connect(tmp_path / "sup" / ".stateous" / "outbox.db", isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        view = read_folder(str(tmp_path / "sup"))
    finally:
        holder.execute("COMMIT")
        holder.close()
    assert (view.running, view.outbox_readable, view.outbox_size) == (True, False, 3)


def test_a_missing_folder_is_a_sentence(tmp_path: Path) -> None:
    view = read_folder(str(tmp_path / "nowhere"))
    assert view.problems == (
        f"{tmp_path / 'nowhere' / 'stateous.yaml'} does not exist: is this a supervisor's folder?",
    )


async def test_outboxes_screen_shows_grants_and_highlights_a_stale_message(
    console: Callable[..., ConsoleApp], tmp_path: Path
) -> None:
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
    write_folder(tmp_path / "sup", status=status)
    app = console(supervisors=[str(tmp_path / "sup")])
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("o")
        await wait_for(
            pilot, lambda: isinstance(app.screen, OutboxesScreen) and bool(app.screen.views)
        )
        await settle(pilot)
        folders = app.screen.query_one("#folders", DataTable)
        row = plain(folders.get_row(str(tmp_path / "sup")))
        assert row == ["build-box-1", "stopped", "0", "1", "2", "http://127.0.0.1:8080"]
        assert folders.get_row(str(tmp_path / "sup"))[4].style == "bold red"
        grants = app.screen.query_one("#grants", DataTable)
        assert plain(grants.get_row("0")) == ["2", "ORDER-1", "review", "1", "29s"]
        messages = app.screen.query_one("#messages", DataTable)
        assert plain(messages.get_row("1")) == [
            "1",
            "report",
            "2",
            "1",
            "ORDER-1",
            "1m 30s",
            "event reviewed",
        ]
        assert messages.get_row("1")[5].style == "bold red"
        assert messages.get_row("2")[5].style == ""
        messages.focus()
        await pilot.press("down")
        await settle(pilot)
        assert "asked the reviewer" in str(app.screen.query_one("#message-body", Static).render())


async def test_outboxes_screen_without_folders_says_how_to_add_one(
    console: Callable[..., ConsoleApp],
) -> None:
    app = console(settings=Settings(supervisors=("./old-supervisor",)))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.press("o")
        await settle(pilot)
        hint = str(app.screen.query_one(".hint", Static).render())
        assert "Start the console with --supervisor FOLDER" in hint
        assert "Last used: --supervisor ./old-supervisor" in hint


async def test_unreachable_control_plane_shows_the_banner_and_keeps_retrying(
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    app = make_console(url, refresh=0.2, settings_file=tmp_path / "console.yaml")
    async with app.run_test(size=(100, 24)) as pilot:
        await wait_for(pilot, lambda: app.unreachable is not None)
        banner = app.screen.query_one(Banner)
        assert banner.display
        text = str(banner.render())
        assert text.startswith(f"cannot reach {url}: ")
        assert text.endswith("; retrying")
        await pilot.pause(0.5)
        assert app.is_running
        await pilot.press("l")
        await pilot.pause(0.3)
        assert app.screen.query_one(Banner).display


def test_settings_round_trip_and_a_broken_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "console.yaml"
    assert load_settings(path) == (Settings(), None)
    assert save_settings(path, Settings(supervisors=("a", "b"), theme="nord")) is None
    assert path.read_text(encoding="utf-8") == "supervisors:\n- a\n- b\ntheme: nord\n"
    assert load_settings(path) == (Settings(supervisors=("a", "b"), theme="nord"), None)
    path.write_text("theme: [unclosed\n", encoding="utf-8")
    assert load_settings(path) == (
        Settings(),
        f"the settings file {path} is not valid YAML; ignored",
    )
    path.write_text("theme: 5\n", encoding="utf-8")
    assert load_settings(path) == (Settings(), f"the settings file {path} has a bad theme; ignored")
    # The URL an older console remembered is no setting any more: ignored, without a warning.
    path.write_text("url: http://old:1\nsupervisors: [a]\n", encoding="utf-8")
    assert load_settings(path) == (Settings(supervisors=("a",)), None)


async def test_the_console_remembers_folders_and_theme_not_the_url(
    console: Callable[..., ConsoleApp], tmp_path: Path
) -> None:
    app = console(supervisors=["./sup"], notices=["the settings file x is not valid YAML; ignored"])
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        assert "the settings file x is not valid YAML; ignored" in notes(pilot)
        app.theme = "nord"
        await pilot.press("q")
    assert load_settings(tmp_path / "console.yaml") == (
        Settings(supervisors=("./sup",), theme="nord"),
        None,
    )
    assert "url" not in (tmp_path / "console.yaml").read_text(encoding="utf-8")
    # Started again without --supervisor: the folders last used are kept.
    again = console(settings=load_settings(tmp_path / "console.yaml")[0])
    async with again.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        assert again.theme == "nord"
        await pilot.press("q")
    assert load_settings(tmp_path / "console.yaml")[0].supervisors == ("./sup",)


async def test_help_lists_the_keys_of_the_screen(console: Callable[..., ConsoleApp]) -> None:
    app = console()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = repr(app.screen.rows)
        for words in ("Pause", "Cancelled only", "the leases screen", "command palette"):
            assert words in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_the_palette_offers_every_action_by_name(console: Callable[..., ConsoleApp]) -> None:
    app = console()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        names = [c.title for c in app.get_system_commands(app.screen)]
        for name in (
            "Tokens",
            "Leases",
            "Supervisors and outboxes",
            "Pause the token",
            "Cancel the token",
            "Fire an event",
            "Start a token",
            "Show paused tokens",
        ):
            assert name in names


@pytest.mark.parametrize("refresh", ["0.1", "61"])
def test_console_refuses_a_refresh_out_of_range(refresh: str) -> None:
    from click.testing import CliRunner

    from stateous.cli.console import console_command

    result = CliRunner().invoke(console_command, ["--refresh", refresh])
    assert result.exit_code == 2
    assert f"{refresh!r} is not a number of seconds from 0.2 to 60" in result.output


def test_console_url_is_the_url_of_every_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`--url`, else `STATEOUS_URL`, else http://127.0.0.1:8080, as for every command: a URL in
    the settings file of an older console is not used (the banner names the URL tried)."""
    from stateous.cli.token import resolve_url

    monkeypatch.delenv("STATEOUS_URL", raising=False)
    assert resolve_url(None) == "http://127.0.0.1:8080"
    monkeypatch.setenv("STATEOUS_URL", "http://env:2")
    assert resolve_url(None) == "http://env:2"
    assert resolve_url("http://opt:3") == "http://opt:3"


def test_console_refuses_a_bad_url_with_one_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    from stateous.cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main(["console", "--url", "notaurl"])
    assert stopped.value.code == 1
    assert capsys.readouterr().err == (
        "error: notaurl is not a URL: it must start with http:// or https://, "
        "as in http://127.0.0.1:8080\n"
    )
