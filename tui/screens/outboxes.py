"""`o`: the supervisors the control plane knows, then each supervisor folder's
status, running grants and outbox, read-only."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import DataTable, Footer, Static

from stateous.model.versions import short
from stateous.tui.format import local_time, parse_time, since
from stateous.tui.outbox import STALE_SECONDS, SupervisorView, read_folder
from stateous.tui.widgets import Banner, StatusBar
from stateous.tui.widgets.polling import PollingScreen
from stateous.tui.widgets.tables import add_columns, fill

REGISTRY = (
    ("supervisor", "name"),
    ("host", "host"),
    ("status", "status"),
    ("seen", "seen"),
    ("states", "states"),
    ("slots", "slots"),
    ("version", "version"),
)
REGISTRY_STYLES = {"live": "green", "stale": "bold yellow", "gone": "dim"}
FOLDERS = (
    ("supervisor", "name"),
    ("runs", "runs"),
    ("pid", "pid"),
    ("tasks", "tasks"),
    ("outbox", "outbox"),
    ("url", "url"),
)
GRANTS = (
    ("task", "task"),
    ("token", "token"),
    ("state", "state"),
    ("att", "attempt"),
    ("running", "started"),
)
MESSAGES = (
    ("id", "id"),
    ("kind", "kind"),
    ("task", "task"),
    ("att", "attempt"),
    ("token", "token"),
    ("age", "age"),
    ("summary", "summary"),
)


def no_folders_hint(last_used: tuple[str, ...]) -> str:
    """What the screen says when the console was started without `--supervisor`."""
    hint = (
        "No supervisor folder is shown. Start the console with --supervisor FOLDER "
        "(repeatable) to see each supervisor's running tasks and the messages in its outbox:\n\n"
        "    stateous console --supervisor ./orders-supervisor"
    )
    if last_used:
        hint += "\n\nLast used: " + " ".join(f"--supervisor {f}" for f in last_used)
    return hint


def registry_row(entry: dict[str, Any], now: datetime) -> list[Text]:
    """One supervisor of `GET /supervisors`: name, host, status, last seen, states, slots used."""
    status = str(entry.get("status"))
    running = entry.get("running")
    used = len(running) if isinstance(running, list) else 0
    states = entry.get("states")
    return [
        Text(str(entry.get("supervisor")), style="bold"),
        Text(str(entry.get("host"))),
        Text(status, style=REGISTRY_STYLES.get(status, "")),
        Text(since(entry.get("seen_at"), now) + " ago", justify="right"),
        Text(", ".join(str(s) for s in states) if isinstance(states, list) else "?", style="cyan"),
        Text(f"{used}/{entry.get('slots')}", justify="right"),
    ]


def served_version(entry: dict[str, Any], current: str | None) -> Text:
    """The version a supervisor serves: its checksum's 8 hex digits, `(current)` after the one
    new tokens start on; `-` for a supervisor that names none (one from before versions)."""
    checksum = entry.get("checksum")
    if not isinstance(checksum, str):
        return Text("-", style="dim")
    text = Text(short(checksum), style="magenta")
    if checksum == current:
        text.append(" (current)", style="dim")
    return text


def folder_url(view: SupervisorView) -> str | None:
    """The URL the supervisor really uses (its `status.json`, e.g. under `stateous demo`) while
    it runs; else the `url:` of its `stateous.yaml`."""
    used = view.status.get("url")
    return used if view.running and isinstance(used, str) and used else view.url


def is_stale(created_at: str, now: datetime) -> bool:
    """Whether an outbox message is older than 60 s: the control plane has not taken it."""
    moment = parse_time(created_at)
    return moment is not None and (now - moment).total_seconds() > STALE_SECONDS


class OutboxesScreen(PollingScreen):
    """The control plane's supervisors, then the folders given with `--supervisor`; select a
    folder to see its grants and outbox."""

    TITLE = "supervisors and outboxes"

    def __init__(self) -> None:
        super().__init__()
        self.views: list[SupervisorView] = []
        self.chosen = 0

    def compose(self) -> ComposeResult:
        """Status bar, banner, the folders, then grants and messages of the chosen one."""
        yield StatusBar()
        yield Banner()
        yield DataTable(id="registry", cursor_type="row")
        if not self.console.supervisors:
            yield Static(no_folders_hint(self.console.settings.supervisors), classes="hint")
        else:
            yield DataTable(id="folders", cursor_type="row")
            yield Static("", classes="filters", id="problems")
            with Horizontal(classes="pair"):
                yield DataTable(id="grants", cursor_type="row")
                with Vertical():
                    yield DataTable(id="messages", cursor_type="row")
                    yield Static("select a message to see its body", id="message-body")
        yield Footer()

    def on_mount(self) -> None:
        """Columns and the poll timer."""
        add_columns(self, {"registry": REGISTRY})
        registry = self.query_one("#registry", DataTable)
        registry.border_title = "supervisors the control plane sees"
        registry.styles.height = 4
        if not self.console.supervisors:
            self.start_polling()
            return
        add_columns(self, {"folders": FOLDERS, "grants": GRANTS, "messages": MESSAGES})
        self.query_one("#folders", DataTable).styles.height = len(self.console.supervisors) + 3
        self.query_one("#grants", DataTable).border_title = "running"
        self.query_one("#messages", DataTable).border_title = "outbox"
        self.start_polling()

    def refresh_now(self) -> None:
        """Ask the control plane for its supervisors, and read the folders."""
        self.poll_registry()
        if self.console.supervisors:
            self.poll()

    @work(exclusive=True, group="registry")
    async def poll_registry(self) -> None:
        """`GET /supervisors` (an older control plane has none: the table says so)."""
        found = await self.console.call(self.console.plane.supervisors(), quiet=True)
        try:
            self.show_registry(found)
        except NoMatches:
            return  # the screen closed while the request was in flight

    def show_registry(self, entries: list[dict[str, Any]] | None) -> None:
        """Fill the registry table, as tall as its rows."""
        table = self.query_one("#registry", DataTable)
        current = (self.console.health or {}).get("checksum")
        now = self.console.now()
        rows = [
            [
                *registry_row(e, now),
                served_version(e, current if isinstance(current, str) else None),
            ]
            for e in entries or []
        ]
        fill(table, rows, [str(e.get("supervisor")) for e in entries or []])
        table.styles.height = max(len(rows), 1) + 3
        if entries is None:
            table.border_title = "supervisors the control plane sees: none (no registry)"
        elif not entries:
            table.border_title = "supervisors the control plane sees: none yet"
        else:
            table.border_title = "supervisors the control plane sees"

    @work(exclusive=True, group="poll", thread=True)
    def poll(self) -> None:
        """Read every folder in a thread: SQLite and the files block."""
        views = [read_folder(folder) for folder in self.console.supervisors]
        self.app.call_from_thread(self._show_if_shown, views)

    def _show_if_shown(self, views: list[SupervisorView]) -> None:
        try:
            self.show(views)
        except NoMatches:
            return  # the screen closed while the folders were read

    def show(self, views: list[SupervisorView]) -> None:
        """Fill the folders table and the chosen folder's details."""
        self.views = views
        now = self.console.now()
        rows = [self._folder_row(v, now) for v in views]
        fill(self.query_one("#folders", DataTable), rows, [v.folder for v in views])
        self._show_details(now)

    @staticmethod
    def _folder_row(view: SupervisorView, now: datetime) -> list[Text]:
        runs = Text("runs", style="green") if view.running else Text("stopped", style="dim")
        size = view.outbox_size
        stale = any(is_stale(m.created_at, now) for m in view.messages)
        outbox = Text(
            "?" if size is None else str(size),
            justify="right",
            style="bold red" if stale else "bold" if size else "dim",
        )
        return [
            Text(view.name or view.folder, style="bold"),
            runs,
            Text(str(view.status.get("pid", "")), justify="right"),
            Text(str(len(view.grants)), justify="right"),
            outbox,
            Text(folder_url(view) or "?", style="dim"),
        ]

    def _show_details(self, now: datetime) -> None:
        if not self.views:
            return
        view = self.views[min(self.chosen, len(self.views) - 1)]
        problems = list(view.problems)
        if not view.outbox_readable and view.running:
            problems.append(
                "the running supervisor holds its outbox; its size comes from status.json"
            )
        started = view.status.get("started_at")
        head = f"{view.folder}" + (
            f" · started {local_time(started, with_date=True)}" if started else ""
        )
        self.query_one("#problems", Static).update(" · ".join([head, *problems]))
        grants = view.grants
        fill(
            self.query_one("#grants", DataTable),
            [
                [
                    Text(str(g.get("task")), justify="right"),
                    Text(str(g.get("token")), style="bold"),
                    Text(str(g.get("state")), style="cyan"),
                    Text(str(g.get("attempt")), justify="right"),
                    Text(since(g.get("started_at") or g.get("start"), now), justify="right"),
                ]
                for g in grants
            ],
            [str(i) for i in range(len(grants))],
        )
        fill(
            self.query_one("#messages", DataTable),
            [
                [
                    Text(str(m.id), justify="right"),
                    Text(m.kind),
                    Text(str(m.task), justify="right"),
                    Text(str(m.attempt), justify="right"),
                    Text(m.token, style="bold"),
                    Text(
                        since(m.created_at, now),
                        justify="right",
                        style="bold red" if is_stale(m.created_at, now) else "",
                    ),
                    Text(m.summary),
                ]
                for m in view.messages
            ],
            [str(m.id) for m in view.messages],
        )

    @on(DataTable.RowHighlighted, "#folders")
    def _folder_chosen(self, highlighted: DataTable.RowHighlighted) -> None:
        self.chosen = highlighted.cursor_row
        self._show_details(self.console.now())

    @on(DataTable.RowHighlighted, "#messages")
    @on(DataTable.RowSelected, "#messages")
    def _message_chosen(self, chosen: DataTable.RowHighlighted | DataTable.RowSelected) -> None:
        if not self.views:
            return
        view = self.views[min(self.chosen, len(self.views) - 1)]
        for message in view.messages:
            if str(message.id) == chosen.row_key.value:
                self.query_one("#message-body", Static).update(
                    Text(
                        f"#{message.id} {message.kind} at {local_time(message.created_at, with_date=True)}\n{message.body}"
                    )
                )
