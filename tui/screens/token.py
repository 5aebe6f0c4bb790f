"""`enter`: one token, with live history, tasks, timers, memory, context and children."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, RichLog, Static, TabbedContent, TabPane

from stateous.model.findings import finding_lines
from stateous.model.history import display_state, history_line, payload_json
from stateous.model.versions import version_note
from stateous.tui.format import (
    TASK_STYLES,
    countdown,
    lease_bar,
    local_time,
    since,
    status_text,
    styled,
    token_line_text,
)
from stateous.tui.screens.repair import REPAIR_BINDINGS, RepairScreen
from stateous.tui.screens.steering import STEERING_BINDINGS
from stateous.tui.screens.tokens import steering_commands
from stateous.tui.versions import versions_of
from stateous.tui.widgets import Banner, StatusBar
from stateous.tui.widgets.polling import PollingScreen
from stateous.tui.widgets.tables import add_columns, fill

VALUE_LIMIT = 40
"""A memory value longer than this is cut in the table; the full value shows on select."""

TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "tasks": (
        ("task", "task"),
        ("state", "state"),
        ("visit", "visit"),
        ("status", "status"),
        ("att", "attempt"),
        ("supervisor", "supervisor"),
        ("lease", "lease"),
        ("queued", "queued"),
    ),
    "timers": (("event", "event"), ("kind", "kind"), ("due", "due"), ("countdown", "countdown")),
    "memory": (("key", "key"), ("state", "state"), ("value", "value")),
    "children": (("child", "token"), ("state", "state"), ("status", "status"), ("in state", "age")),
}


class TokenScreen(PollingScreen, RepairScreen):
    """The token screen; polls the token, why it is not moving, its new history entries, and the
    open tab."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        *STEERING_BINDINGS,
        *REPAIR_BINDINGS,
        Binding("u", "parent", "Parent"),
        Binding("enter", "select", "Open/show", show=False),
    ]

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token_id = token
        self.title = f"token {token}"
        self.token: dict[str, Any] | None = None
        self.last_seq = 0
        self.memory: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        """Status bar, banner, the token line, its findings, tabs, footer."""
        yield StatusBar()
        yield Banner()
        yield Static(Text(f"{self.token_id}: loading"), classes="title", id="line")
        yield Static("", id="findings")
        with TabbedContent(id="tabs"):
            with TabPane("History", id="history-tab"):
                yield RichLog(id="history", wrap=False, markup=False, auto_scroll=True)
            with TabPane("Tasks", id="tasks-tab"):
                yield DataTable(id="tasks", cursor_type="row")
            with TabPane("Timers", id="timers-tab"):
                yield DataTable(id="timers", cursor_type="row")
            with TabPane("Memory", id="memory-tab"):
                yield DataTable(id="memory", cursor_type="row")
                yield Static("select a key to see its whole value", id="memory-value")
            with TabPane("Context", id="context-tab"):
                yield Static("", id="context")
            with TabPane("Children", id="children-tab"):
                yield DataTable(id="children", cursor_type="row")
        yield Footer()

    def retarget(self, token: str) -> None:
        """Show another token: forget everything shown of the previous one."""
        self.workers.cancel_node(self)
        self.token_id = token
        self.title = f"token {token}"
        self.token = None
        self.last_seq = 0
        self.memory = []
        self.query_one("#line", Static).update(Text(f"{token}: loading"))
        self.query_one("#findings", Static).update("")
        self.query_one("#history", RichLog).clear()
        self.query_one("#context", Static).update("")
        self.query_one("#memory-value", Static).update("select a key to see its whole value")
        for name in TABLES:
            self.query_one(f"#{name}", DataTable).clear()
        self.query_one(TabbedContent).active = "history-tab"

    def on_mount(self) -> None:
        """Columns and the poll timer."""
        add_columns(self, TABLES)
        self.start_polling()

    @on(TabbedContent.TabActivated)
    def _tab_changed(self) -> None:
        self.refresh_now()

    # ------------------------------------------------------------------ data

    async def fetch(self) -> None:
        """The token, the history after the last entry shown, and the open tab's rows."""
        plane, ident = self.console.plane, self.token_id
        token = await self.console.call(plane.get(ident))
        if token is None or ident != self.token_id:
            return
        self.show_token(token)
        findings = await self.console.call(plane.findings(ident), quiet=True)
        if findings is not None and ident == self.token_id:
            self.show_findings(findings)
        entries = await self.console.call(plane.history(ident, after=self.last_seq))
        if entries is not None and ident == self.token_id:
            self.append_history(entries)
        tab = self.query_one(TabbedContent).active
        if tab == "tasks-tab":
            tasks = await self.console.call(plane.token_tasks(ident))
            if tasks is not None:
                self.show_tasks(tasks)
        elif tab == "timers-tab":
            timers = await self.console.call(plane.timers(ident))
            if timers is not None:
                self.show_timers(timers)
        elif tab == "memory-tab":
            memory = await self.console.call(plane.memory(ident))
            if memory is not None:
                self.show_memory(memory)
        elif tab == "children-tab":
            children = await self.console.call(plane.tokens(parent=ident, limit=1000))
            if children is not None:
                self.show_children(children)

    def show_token(self, token: dict[str, Any]) -> None:
        """The token line (as `token show` prints it, with its version when it is not the
        current one), its parent, and its context."""
        self.token = token
        line = token_line_text(token)
        # As `token show` prints it: the version of a token not on the one new tokens start on.
        note = version_note(token, versions_of(self.console.stats))
        if note:
            line.append(note, style="dim")
        parent = token.get("parent")
        if isinstance(parent, str):
            line.append(f"   child of {parent} (u)", style="dim")
        self.query_one("#line", Static).update(line)
        context = json.dumps(token.get("context"), indent=2, ensure_ascii=False)
        self.query_one("#context", Static).update(
            Syntax(context, "json", background_color="default")
        )

    def show_findings(self, findings: list[dict[str, Any]]) -> None:
        """Why the token is not moving: one line per finding, most important first."""
        lines = [styled(line) for line in finding_lines(findings)]
        self.query_one("#findings", Static).update(Text("\n").join(lines))

    def append_history(self, entries: list[dict[str, Any]]) -> None:
        """Append the new entries, each rendered exactly as `token show` renders it."""
        log = self.query_one("#history", RichLog)
        for entry in entries:
            seq = entry.get("seq")
            # A control plane without `after=` sends everything: keep only what is new.
            if isinstance(seq, int) and seq <= self.last_seq:
                continue
            log.write(styled(history_line(entry)))
            if isinstance(seq, int):
                self.last_seq = seq

    def show_tasks(self, tasks: list[dict[str, Any]]) -> None:
        """Tasks with their lease countdown bars."""
        now = self.console.now()
        rows = [
            [
                Text(str(t.get("task")), justify="right"),
                Text(str(t.get("state")), style="cyan"),
                Text(str(t.get("visit")), justify="right"),
                status_text(t.get("status"), TASK_STYLES),
                Text(str(t.get("attempt")), justify="right"),
                Text(str(t.get("claimed_by") or "")),
                lease_bar(t.get("lease_until"), now),
                Text(since(t.get("queued_at"), now) + " ago", style="dim"),
            ]
            for t in tasks
        ]
        fill(self.query_one("#tasks", DataTable), rows, [str(t.get("task")) for t in tasks])

    def show_timers(self, timers: list[dict[str, Any]]) -> None:
        """The pending timers with their countdowns."""
        now = self.console.now()
        pending = [t for t in timers if t.get("status") == "pending"]
        rows = [
            [
                Text(str(t.get("event")), style="bold"),
                Text(str(t.get("kind"))),
                Text(local_time(t.get("due_at"), with_date=True)),
                Text(countdown(t.get("due_at"), now), justify="right"),
            ]
            for t in pending
        ]
        fill(self.query_one("#timers", DataTable), rows, [str(t.get("id")) for t in pending])

    def show_memory(self, memory: list[dict[str, Any]]) -> None:
        """Keys and values (cut; the whole value on select)."""
        self.memory = memory
        rows = [
            [
                Text(str(m.get("key")), style="bold"),
                Text(str(m.get("state")), style="cyan"),
                Text(payload_json(m.get("value"))[:VALUE_LIMIT]),
            ]
            for m in memory
        ]
        fill(self.query_one("#memory", DataTable), rows, [str(i) for i in range(len(memory))])

    def show_children(self, children: list[dict[str, Any]]) -> None:
        """The children, most recently moved first; enter opens one."""
        now = self.console.now()
        rows = [
            [
                Text(str(c.get("token"))),
                Text(display_state(c.get("state")), style="cyan"),
                status_text(c.get("status")),
                Text(since(c.get("entered_at"), now), justify="right"),
            ]
            for c in children
        ]
        fill(self.query_one("#children", DataTable), rows, [str(c.get("token")) for c in children])

    # ------------------------------------------------------------------ steering

    def selected_token(self) -> dict[str, Any] | None:
        """The token of this screen."""
        return self.token

    # ------------------------------------------------------------------ keys

    def action_back(self) -> None:
        """Back to the screen below."""
        self.dismiss()

    def action_parent(self) -> None:
        """Open the parent token in place of this one."""
        parent = (self.token or {}).get("parent")
        if isinstance(parent, str):
            self.app.switch_screen(TokenScreen(parent))
        else:
            self.notify(f"token '{self.token_id}' has no parent", severity="warning")

    @on(DataTable.RowSelected, "#children")
    def _child_chosen(self, selected: DataTable.RowSelected) -> None:
        self.app.push_screen(TokenScreen(str(selected.row_key.value)))

    @on(DataTable.RowHighlighted, "#memory")
    @on(DataTable.RowSelected, "#memory")
    def _memory_chosen(self, chosen: DataTable.RowHighlighted | DataTable.RowSelected) -> None:
        index = int(str(chosen.row_key.value))
        if index < len(self.memory):
            row = self.memory[index]
            value = json.dumps(row.get("value"), indent=2, ensure_ascii=False)
            self.query_one("#memory-value", Static).update(f"{row.get('key')} =\n{value}")

    def action_select(self) -> None:
        """Enter: open the selected child, or show the selected memory value."""
        focused = self.focused
        if isinstance(focused, DataTable):
            focused.action_select_cursor()

    def palette_commands(self) -> list[Any]:
        """The palette's commands of this screen."""
        from textual.app import SystemCommand

        return [
            SystemCommand("Back to the list", "(escape)", self.action_back),
            SystemCommand("Open the parent token", "(u)", self.action_parent),
            SystemCommand("Retry the failed token", "(R)", self.action_retry),
            SystemCommand("Move the token to a state", "(m)", self.action_move),
            SystemCommand("Migrate the token to the current version", "(M)", self.action_migrate),
            *steering_commands(self),
        ]
