"""Bulk jobs in the console: the `b` screen of jobs, and the confirmation that a
selection's `p` `r` `c` `f` ask for (the action, the count from a dry run, a reason field)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Footer, Input, Label, Static

from stateous.model.history import by_suffix
from stateous.tui.format import local_time
from stateous.tui.jobs import progress_text
from stateous.tui.screens.confirm import (
    ANSWER_BINDINGS,
    REASON_ID,
    keys_hint,
    reason_field,
    typed_reason,
)
from stateous.tui.unexpected import GuardedModal
from stateous.tui.widgets import Banner, StatusBar
from stateous.tui.widgets.polling import PollingScreen
from stateous.tui.widgets.tables import add_columns, fill

COLUMNS = (
    ("job", "job"),
    ("action", "action"),
    ("status", "status"),
    ("progress", "progress"),
    ("skipped", "skipped"),
    ("created", "created"),
    ("by", "by"),
)
EMPTY = "No bulk jobs. On the tokens screen, * selects every token of the filter; p r c f act."
STATUS_STYLES = {"running": "green", "finished": "dim", "stopped": "yellow"}


def skipped_text(job: dict[str, Any]) -> str:
    """`token_not_active 3, ...`, or `-`."""
    skipped = job.get("skipped")
    if not isinstance(skipped, dict) or not skipped:
        return "-"
    return ", ".join(f"{code} {int(n):,}" for code, n in skipped.items())


def job_row(job: dict[str, Any]) -> list[Text]:
    """One row of the `b` screen."""
    status = str(job.get("status"))
    action = str(job.get("action")) + (f" {job['event']}" if job.get("event") else "")
    return [
        Text(str(job.get("job")), style="bold", justify="right"),
        Text(action, style="cyan"),
        Text(status, style=STATUS_STYLES.get(status, "")),
        Text(progress_text(job), justify="right"),
        Text(skipped_text(job), style="dim"),
        Text(local_time(job.get("created_at"), with_date=True), style="dim"),
        Text(by_suffix(job.get("by")).strip(" []") or "-"),
    ]


class BulkScreen(PollingScreen):
    """`b`: the bulk jobs, newest first, with their progress."""

    TITLE = "bulk jobs"
    AUTO_FOCUS = "#bulk"

    def __init__(self) -> None:
        super().__init__()
        self.jobs: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        """Status bar, banner, a hint, the jobs, footer."""
        yield StatusBar()
        yield Banner()
        yield Static("", classes="filters", id="bulk-hint")
        yield DataTable(id="bulk", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        """Columns, then poll."""
        add_columns(self, {"bulk": COLUMNS})
        self.start_polling()

    async def fetch(self) -> None:
        """`GET /bulk`."""
        jobs = await self.console.call(self.console.plane.bulk_jobs(limit=100), quiet=True)
        if jobs is None:
            return
        self.jobs = jobs
        fill(self.query_one("#bulk", DataTable), [job_row(j) for j in jobs],
             [str(j.get("job")) for j in jobs])  # fmt: skip
        running = sum(1 for j in jobs if j.get("status") == "running")
        noun = "job" if len(jobs) == 1 else "jobs"
        hint = f"{len(jobs)} {noun}, {running} running" if jobs else EMPTY
        self.query_one("#bulk-hint", Static).update(hint)


@dataclass(frozen=True)
class BulkChoice:
    """What the confirmation answered: the reason (may be empty), and a fire's event."""

    reason: str
    event: str | None = None
    payload: dict[str, Any] | None = None


class BulkConfirmScreen(GuardedModal[BulkChoice | None]):
    """`cancel 1,204 tokens?` with the first ids, a reason field (and for fire, the event).

    It answers the keys of every confirmation (`confirm.py`): `y` starts the job, `enter` in the
    reason field too, `n` or `escape` does not. A fire opens in its event field (it has to be
    named); the others open with No focused, `tab` going on to the reason.
    """

    BINDINGS: ClassVar[list[BindingType]] = ANSWER_BINDINGS

    def __init__(
        self,
        action: str,
        matched: int,
        tokens: list[str],
        selection: str,
        *,
        to: str | None = None,
        refused: str | None = None,
    ) -> None:
        super().__init__()
        self.action = action
        self.matched = matched
        self.tokens = tokens
        self.selection = selection
        self.to = to
        """A migrate's target version, as people read it (8 hex digits)."""
        self.refused = refused
        """A migrate's dry run's `refused: …` line."""

    def question(self) -> str:
        """The question, the selection, the first ids (and a migrate's refusals)."""
        noun = "token" if self.matched == 1 else "tokens"
        first = ", ".join(self.tokens[:5]) + (" ..." if self.matched > 5 else "")
        to = f" to {self.to}" if self.to else ""
        skips = "" if (self.refused or "").endswith(": none") else " (the job skips them)"
        refused = f"{self.refused}{skips}\n" if self.refused else ""
        return (
            f"{self.action} {self.matched:,} {noun}{to}?\n"
            f"every token where {self.selection}\n{first}\n{refused}"
            "One bulk job acts on each, and goes on if the console closes."
        )

    def compose(self) -> ComposeResult:
        """The question, the keys, the event and payload (fire), the reason, two buttons."""
        yes = f"{self.action.capitalize()} them"
        with Vertical(classes="dialog"):
            yield Label(self.question(), classes="question", id="question")
            yield keys_hint(yes, reason=True)
            if self.action == "fire":
                yield Input(placeholder="event (enter: the next field)", id="event")
                yield Input(placeholder="payload (a JSON object, optional)", id="payload")
            yield reason_field("in each token's history")
            yield Label("", classes="error", id="error")
            with Horizontal(classes="buttons"):
                yield Button(f"{yes} (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        """A fire starts in its event field; the others on No, where `y` answers at once."""
        if self.action == "fire":
            self.query_one("#event", Input).focus()
        else:
            self.query_one("#no", Button).focus()

    def action_answer(self, answer: bool) -> None:
        """`y` starts the job (a fire once its event is named); `n` and `escape` close."""
        if not answer:
            self.dismiss(None)
            return
        reason = typed_reason(self)
        if self.action != "fire":
            self.dismiss(BulkChoice(reason))
            return
        event = self.query_one("#event", Input).value.strip()
        text = self.query_one("#payload", Input).value.strip()
        problem, payload = _payload(text)
        if not event:
            problem = "name the event to fire"
        if problem:
            self.query_one("#error", Label).update(problem)
            return
        self.dismiss(BulkChoice(reason, event, payload))

    @on(Button.Pressed, "#yes")
    def _yes(self) -> None:
        self.action_answer(True)

    @on(Input.Submitted)
    def _submitted(self, submitted: Input.Submitted) -> None:
        # Enter in the reason answers yes; in the event or the payload it goes to the next field.
        if submitted.input.id == REASON_ID:
            self.action_answer(True)
        else:
            self.focus_next()

    @on(Button.Pressed, "#no")
    def _no(self) -> None:
        self.dismiss(None)


def _payload(text: str) -> tuple[str, dict[str, Any] | None]:
    if not text:
        return "", None
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"the payload is not JSON: {exc}", None
    if not isinstance(value, dict):
        return 'the payload is a JSON object, such as {"approved": true}', None
    return "", value
