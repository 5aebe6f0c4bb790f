"""`i`: the tokens waiting for a person; `enter` opens the fire form of one."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from stateous.client import Page
from stateous.tui.format import local_time, since
from stateous.tui.screens.fire import FireScreen
from stateous.tui.screens.read_only import (
    ReadOnlyScreen,
    read_only,
    say_read_only,
    with_read_only,
)
from stateous.tui.widgets import Banner, StatusBar
from stateous.tui.widgets.polling import PollingScreen
from stateous.tui.widgets.tables import add_columns, fill

COLUMNS = (
    ("token", "token"),
    ("state", "state"),
    ("waiting", "waiting"),
    ("since", "since"),
    ("the question", "note"),
    ("events", "events"),
)
EMPTY = "No token waits for a person."
NO_INBOX = (
    "This control plane has no inbox (it answers 404 to GET /inbox): upgrade it to see the inbox."
)
HINT = "enter: answer the token under the cursor (the fire form)"
MORE = "the {} longest waiting shown; more wait (inbox {}+)"
"""Said beside the hint when the app's poll read one page and more follow."""


def event_text(event: object) -> str:
    """An event's name, with `{…}` when it takes a payload."""
    if not isinstance(event, dict):
        return "?"
    return str(event.get("event")) + (" {…}" if event.get("payload_schema") else "")


def inbox_row(entry: dict[str, Any], now: datetime) -> list[Text]:
    """One row: token (and `paused`), state, how long and since when, question, events."""
    token = Text(str(entry.get("token")), style="bold")
    if entry.get("status") == "paused":
        token.append(" paused", style="yellow")
    events = entry.get("events") or []
    return [
        token,
        Text(str(entry.get("state")), style="cyan"),
        Text(since(entry.get("since"), now), justify="right"),
        Text(local_time(entry.get("since"), with_date=True), style="dim"),
        Text(str(entry.get("note") or "-")),
        Text(", ".join(event_text(e) for e in events) or "-", style="magenta"),
    ]


class InboxScreen(PollingScreen, ReadOnlyScreen):
    """The waiting tasks of live tokens, the longest waiting first, from the app's poll."""

    TITLE = "inbox"

    BINDINGS: ClassVar[list[BindingType]] = [
        *with_read_only([Binding("enter", "answer", "Answer (fire)")]),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.entries: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        """Status bar, banner, the hint, the table, footer."""
        yield StatusBar()
        yield Banner()
        yield Static(HINT, classes="filters", id="inbox-hint")
        yield DataTable(id="inbox", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        """Columns; follow the app's inbox (it polls `GET /inbox` for the header's count)."""
        add_columns(self, {"inbox": COLUMNS})
        self.watch(self.app, "inbox", self.show)

    def show(self, entries: list[dict[str, Any]] | None = None) -> None:
        """Fill the table; say so when nobody waits or the plane has no inbox."""
        self.entries = list(entries or [])
        now = self.console.now()
        keys = [f"{e.get('token')}:{e.get('task')}" for e in self.entries]
        fill(
            self.query_one("#inbox", DataTable),
            [inbox_row(e, now) for e in self.entries],
            keys,
        )
        hint = HINT if self.entries else EMPTY if entries is not None else NO_INBOX
        if isinstance(entries, Page) and entries.next is not None:
            hint += " · " + MORE.format(len(entries), len(entries))
        self.query_one("#inbox-hint", Static).update(hint)

    async def fetch(self) -> None:
        """Nothing of its own: the app's poll brings the inbox."""

    def chosen(self) -> dict[str, Any] | None:
        """The entry under the cursor."""
        table = self.query_one("#inbox", DataTable)
        if not self.entries or table.cursor_row < 0:
            return None
        return self.entries[min(table.cursor_row, len(self.entries) - 1)]

    @on(DataTable.RowSelected, "#inbox")
    def _row_selected(self, _selected: DataTable.RowSelected) -> None:
        self.action_answer()

    def action_answer(self) -> None:
        """Open the fire form of the token under the cursor; on a read-only console, say which
        role it needs (`enter` on the table selects a row without asking `check_action`)."""
        if read_only(self):
            say_read_only(self, "Answer (fire)")
            return
        entry = self.chosen()
        if entry is not None:
            self.open_form(str(entry.get("token")))

    @work(exclusive=True, group="answer")
    async def open_form(self, token_id: str) -> None:
        """Read the token as it is now, then open its fire form (the events of its version)."""
        token = await self.console.call(self.console.plane.get(token_id))
        graph = None if token is None else await self.console.graph_for(token)
        if token is None or graph is None:
            return
        self.app.push_screen(FireScreen(token, graph), self._form_closed)

    def _form_closed(self, sent: bool | None) -> None:
        if sent:
            self.app.call_later(self._poll_app)

    def _poll_app(self) -> None:
        # The app polls the inbox: ask it now, so the answered token leaves the list at once.
        poll = getattr(self.app, "poll_plane", None)
        if callable(poll):
            poll()
