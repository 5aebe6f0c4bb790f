"""`s`: the schedules, their next and last run and last slot that failed; `p`/`r` pause or
resume the one under the cursor, whose zone, last token and last error are written out under
the table."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from stateous.model.schedules import error_fixed
from stateous.tui.format import local_time
from stateous.tui.screens.read_only import ReadOnlyScreen, with_read_only
from stateous.tui.widgets import Banner, StatusBar
from stateous.tui.widgets.polling import PollingScreen
from stateous.tui.widgets.tables import add_columns, fill

#: The table's columns: what fits 80 columns. The zone, the last token and the last error's
#: text are on the line under the table, for the schedule under the cursor.
COLUMNS = (
    ("name", "name"),
    ("cron", "cron"),
    ("next run", "next"),
    ("last run", "last_at"),
    ("last error", "last_error"),
)
HINT = "p: pause, r: resume the schedule under the cursor (stateous schedule add makes one)"
EMPTY = "No schedule: stateous schedule add NAME --cron '0 9 * * 1-5' makes one."
NO_SCHEDULES = "This control plane has no schedules (it answers 404 to GET /schedules): upgrade it to use them."


def slot_time(value: object) -> str:
    """A slot's time in the table, local: `10-16 22:00` (a cron's slots fall on minutes)."""
    return local_time(value, with_date=True)[5:16]


def schedule_row(schedule: dict[str, Any]) -> list[Text]:
    """One schedule: name (and `paused`), cron, next run and last run in local time, and when
    its last slot that failed was."""
    name = Text(str(schedule.get("name")), style="bold")
    paused = schedule.get("paused") is True
    if paused:
        name.append(" paused", style="yellow")
    next_at = schedule.get("next_at")
    return [
        name,
        Text(str(schedule.get("cron")), style="cyan"),
        Text("-" if paused or not next_at else slot_time(next_at)),
        Text(slot_time(schedule["last_at"]) if schedule.get("last_at") else "-"),
        error_cell(schedule),
    ]


def error_cell(schedule: dict[str, Any]) -> Text:
    """When the last slot that failed was, in red; `fixed` in green once a later slot
    started."""
    if not schedule.get("last_error"):
        return Text("-")
    when = slot_time(schedule.get("last_error_at"))
    if error_fixed(schedule):
        return Text(f"{when} fixed", style="green")
    return Text(when, style="bold red")


def error_line(schedule: dict[str, Any] | None) -> Text:
    """The schedule under the cursor: its zone and last token, its failed slots and why the
    last one failed."""
    if schedule is None:
        return Text("")
    name = str(schedule.get("name"))
    about = f"{name}: in {schedule.get('tz')}, last token {schedule.get('last_token') or '-'}; "
    if not schedule.get("last_error"):
        return Text(f"{about}no slot failed", style="dim")
    failures = int(schedule.get("failures") or 0)
    when = local_time(schedule.get("last_error_at"), with_date=True)
    fixed = error_fixed(schedule)
    line = Text(f"{about}{failures} slot{'' if failures == 1 else 's'} failed; the last, {when}")
    line.append(" (fixed: a later slot started)" if fixed else "", style="green")
    line.append(f": {schedule.get('last_error')}", style="dim" if fixed else "red")
    return line


class SchedulesScreen(PollingScreen, ReadOnlyScreen):
    """The schedules by name, polled at the console's interval."""

    TITLE = "schedules"
    AUTO_FOCUS = "#schedules"
    DEFAULT_CSS = """
    #schedule-error {
        height: auto;
        max-height: 4;
        padding: 0 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        *with_read_only(
            [
                Binding("p", "steer('pause')", "Pause", tooltip="pause the schedule"),
                Binding("r", "steer('resume')", "Resume", tooltip="resume the schedule"),
            ]
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.schedules: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        """Status bar, banner, the hint, the table, footer."""
        yield StatusBar()
        yield Banner()
        yield Static(HINT, classes="filters", id="schedules-hint")
        yield DataTable(id="schedules", cursor_type="row", zebra_stripes=True)
        yield Static("", id="schedule-error")
        yield Footer()

    def on_mount(self) -> None:
        """Columns, then poll."""
        add_columns(self, {"schedules": COLUMNS})
        self.start_polling()

    async def fetch(self) -> None:
        """`GET /schedules`; a control plane without them says so (404)."""
        found = await self.console.call(self.console.plane.schedules(), quiet=True)
        if found is None:
            self.show(None)
            return
        self.show([row for row in found if isinstance(row, dict)])

    def show(self, schedules: list[dict[str, Any]] | None) -> None:
        """Fill the table and the hint."""
        if schedules is not None:
            self.schedules = schedules
        rows = self.schedules
        fill(
            self.query_one("#schedules", DataTable),
            [schedule_row(s) for s in rows],
            [str(s.get("name")) for s in rows],
        )
        hint = HINT if rows else EMPTY if schedules is not None else NO_SCHEDULES
        self.query_one("#schedules-hint", Static).update(hint)
        self._show_error()

    @on(DataTable.RowHighlighted, "#schedules")
    def _show_error(self) -> None:
        """The last error of the schedule under the cursor, under the table."""
        self.query_one("#schedule-error", Static).update(error_line(self.chosen()))

    def chosen(self) -> dict[str, Any] | None:
        """The schedule under the cursor."""
        table = self.query_one("#schedules", DataTable)
        if not self.schedules or table.cursor_row < 0:
            return None
        return self.schedules[min(table.cursor_row, len(self.schedules) - 1)]

    def action_steer(self, action: str) -> None:
        """Pause or resume the schedule under the cursor."""
        schedule = self.chosen()
        if schedule is None:
            self.notify("no schedule is selected", severity="warning")
            return
        self.steer(str(schedule.get("name")), action)

    @work(exclusive=True, group="steer")
    async def steer(self, name: str, action: str) -> None:
        """One request; the answer is shown at once, a refusal as a notification."""
        plane = self.console.plane
        act = plane.pause_schedule if action == "pause" else plane.resume_schedule
        answer = await self.console.call(act(name))
        if answer is None:
            self.refresh_now()
            return
        self.show([answer if s.get("name") == name else s for s in self.schedules])
        state = "paused" if answer.get("paused") else "running"
        self.notify(f"schedule '{name}' is {state}", title=action)
