"""The token screen and the fire and start forms against the recorded control plane."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import DataTable, Input, RichLog, Static, TabbedContent, TextArea

from stateous.model.history import history_line
from stateous.tui.app import ConsoleApp
from stateous.tui.screens.fire import FireScreen
from stateous.tui.screens.start import StartScreen
from stateous.tui.screens.token import TokenScreen
from stateous.tui.widgets.token_list import TokenList
from tests.unit.tui.helpers import notes, plain, settle, wait_for
from tests.unit.tui.recorded import HISTORY, Recorded


def log_lines(app: ConsoleApp) -> list[str]:
    return [strip.text for strip in app.screen.query_one("#history", RichLog).lines]


async def open_order_1(pilot: object, app: ConsoleApp) -> None:
    await settle(pilot)  # type: ignore[arg-type]
    await pilot.press("enter")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]
    assert isinstance(app.screen, TokenScreen)


async def test_history_is_rendered_as_token_show_and_grows_live(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await open_order_1(pilot, app)
        line = str(app.screen.query_one("#line", Static).render())
        assert line == "ORDER-1: review, active"
        expected = [str(history_line(e)) for e in HISTORY["ORDER-1"]]
        assert log_lines(app) == expected
        assert expected[4] == "20:59:01  #5  build-box-1 took task 1 (attempt 1)"
        recorded.history["ORDER-1"].append(
            {"seq": 13, "at": "2026-10-16T21:00:00Z", "kind": "paused", "data": {}}
        )
        app.screen.refresh_now()  # type: ignore[attr-defined]
        await settle(pilot)
        assert log_lines(app)[-1] == "21:00:00  #13  paused"
        assert len(log_lines(app)) == 13


async def test_tasks_timers_memory_and_children_tabs(console: Callable[..., ConsoleApp]) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await open_order_1(pilot, app)
        tabs = app.screen.query_one(TabbedContent)
        tabs.active = "tasks-tab"
        await settle(pilot)
        tasks = app.screen.query_one("#tasks", DataTable)
        assert plain(tasks.get_row("2")) == [
            "2",
            "review",
            "1",
            "claimed",
            "1",
            "build-box-1",
            "█████░░░ 1m 10s",
            "30s ago",
        ]
        assert plain(tasks.get_row("1"))[6] == "-"
        tabs.active = "timers-tab"
        await settle(pilot)
        timers = app.screen.query_one("#timers", DataTable)
        assert [plain(timers.get_row(str(r.value))) for r in timers.rows] == [
            ["reviewed", "timer", "2026-10-16 21:10:00", "in 10m"]
        ]
        tabs.active = "memory-tab"
        await settle(pilot)
        memory = app.screen.query_one("#memory", DataTable)
        assert plain(memory.get_row("0"))[0:2] == ["reviewer", "review"]
        assert plain(memory.get_row("0"))[2] == '{"name": "Ada", "notes": ["first pass", '
        memory.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert '"ready"' in str(app.screen.query_one("#memory-value", Static).render())


async def test_children_are_navigable_and_a_child_names_its_parent(
    console: Callable[..., ConsoleApp],
) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        app.screen.query_one("#tokens", TokenList).cursor = 4  # ORDER-3
        await pilot.press("enter")
        await settle(pilot)
        app.screen.query_one(TabbedContent).active = "children-tab"
        await settle(pilot)
        children = app.screen.query_one("#children", DataTable)
        assert [str(r.value) for r in children.rows] == ["ORDER-3.checks.1.stock"]
        children.focus()
        await pilot.press("enter")
        await settle(pilot)
        line = str(app.screen.query_one("#line", Static).render())
        assert line == "ORDER-3.checks.1.stock: count, active   child of ORDER-3 (u)"
        await pilot.press("u")
        await settle(pilot)
        assert str(app.screen.query_one("#line", Static).render()) == "ORDER-3: checks, active"


async def test_fire_validates_the_payload_before_sending(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_order_1(pilot, app)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FireScreen))
        form = app.screen
        fields = str(form.query_one("#fields", Static).render())
        assert fields == 'payload Verdict: approved: boolean (required); note: string (default "")'
        assert form.query_one(TextArea).text == '{"approved": false}'
        form.query_one(TextArea).text = '{"approved": "yes"}'
        await pilot.press("ctrl+s")
        await settle(pilot)
        error = str(form.query_one("#error", Static).render())
        assert error == "the payload does not fit Verdict: approved: 'yes' is not of type 'boolean'"
        assert recorded.requests == []
        form.query_one(TextArea).text = '{"approved": true, "note": "fine"}'
        form.query_one(Input).value = "K-1"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert recorded.requests == ["fire ORDER-1 reviewed {'approved': True, 'note': 'fine'} K-1"]
        assert isinstance(app.screen, TokenScreen)
        assert (
            log_lines(app)[-1]
            == '21:00:00  #13  reviewed in review: {"approved": true, "note": "fine"}'
        )
        # The same key again: the control plane answers "duplicate".
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FireScreen))
        app.screen.query_one(TextArea).text = '{"approved": true}'
        app.screen.query_one(Input).value = "K-1"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "duplicate: ORDER-1: review, active" in notes(pilot)


async def test_fire_refused_is_a_notification_and_keeps_the_form(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        recorded.find("ORDER-1")["status"] = "completed"  # type: ignore[index]  # ended meanwhile
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FireScreen))
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "token_not_active: token 'ORDER-1' is completed; it takes no events" in notes(pilot)
        assert isinstance(app.screen, FireScreen)
        await pilot.press("escape")
        await settle(pilot)
        table = app.screen.query_one("#tokens", TokenList)
        assert plain(table.row("ORDER-1"))[3] == "completed"


async def test_start_checks_the_id_and_context_then_starts(
    console: Callable[..., ConsoleApp], recorded: Recorded
) -> None:
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen))
        form = app.screen
        form.query_one(Input).value = "bad id"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "a token id is a letter or digit" in str(form.query_one("#error", Static).render())
        form.query_one(Input).value = "ORDER-77"
        form.query_one(TextArea).text = "{}"
        await pilot.press("ctrl+s")
        await settle(pilot)
        error = str(form.query_one("#error", Static).render())
        assert error == "the context does not fit Item: 'title' is a required property"
        form.query_one(TextArea).text = '{"title": "seventy-seven"}'
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert recorded.requests == ["start ORDER-77 {'title': 'seventy-seven'}"]
        assert "ORDER-77: draft, active" in notes(pilot)
        ids = app.screen.query_one("#tokens", TokenList).keys
        assert ids[0] == "ORDER-77"
