"""`l`: every held task by lease remaining, the supervisors, and the queue per state."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Static

from stateous.tui.format import (
    LEASE_SECONDS,
    TASK_STYLES,
    lease_bar,
    parse_time,
    since,
    status_text,
)
from stateous.tui.screens.outboxes import REGISTRY_STYLES
from stateous.tui.widgets import Banner, StatusBar
from stateous.tui.widgets.panel import Panel
from stateous.tui.widgets.polling import PollingScreen
from stateous.tui.widgets.states import graph_states
from stateous.tui.widgets.tables import add_columns, fill

CLAIM_LOOKUPS_PER_POLL = 10
"""How many tokens' histories one poll reads to learn when their tasks were claimed."""

HELD = (
    ("task", "task"),
    ("token", "token"),
    ("state", "state"),
    ("att", "attempt"),
    ("status", "status"),
    ("supervisor", "supervisor"),
    ("lease", "lease"),
    ("claimed", "claimed"),
)
SUPERVISORS = (
    ("supervisor", "supervisor"),
    ("status", "status"),
    ("tasks", "tasks"),
    ("last renewal", "renewal"),
)
QUEUED = (("state", "state"), ("queued", "queued"), ("oldest", "oldest"))
HELD_HINT = "tasks held (claimed or waiting), by lease remaining"
NO_SUPERVISOR = "No supervisor holds a task, and none is registered."
NO_QUEUE = "No task is queued: the supervisors keep up."


def lease_order(task: dict[str, Any]) -> tuple[int, float, int]:
    """Sort key: leases that end soonest first, tasks without a lease (waiting) last."""
    until = parse_time(task.get("lease_until"))
    number = task.get("task")
    ident = number if isinstance(number, int) else 0
    return (0, until.timestamp(), ident) if until else (1, 0.0, ident)


def per_supervisor(held: list[dict[str, Any]]) -> dict[str, tuple[int, datetime | None]]:
    """Each supervisor's number of held tasks (claimed or waiting) and the time of its last
    lease renewal.

    A renewal sets the lease to now + 2 minutes, so the latest lease tells when it was; a
    waiting task has no lease (its work goes on outside), so it counts but tells no time.
    """
    found: dict[str, tuple[int, datetime | None]] = {}
    for task in held:
        name = task.get("claimed_by")
        if not isinstance(name, str) or task.get("status") not in ("claimed", "waiting"):
            continue
        count, latest = found.get(name, (0, None))
        until = parse_time(task.get("lease_until")) if task.get("status") == "claimed" else None
        renewed = until - timedelta(seconds=LEASE_SECONDS) if until else None
        if renewed and (latest is None or renewed > latest):
            latest = renewed
        found[name] = (count + 1, latest)
    return found


def oldest_per_state(queued: list[dict[str, Any]]) -> dict[str, str]:
    """The oldest `queued_at` of each state among the listed queued tasks."""
    oldest: dict[str, str] = {}
    for task in queued:
        key = str(task.get("state"))
        at = task.get("queued_at")
        if isinstance(at, str) and (key not in oldest or at < oldest[key]):
            oldest[key] = at
    return oldest


def supervisor_rows(
    held: list[dict[str, Any]], registry: list[dict[str, Any]] | None, now: datetime
) -> tuple[list[list[Text]], list[str]]:
    """The supervisors panel: each supervisor holding a task, and each registered one that is
    not gone, by name; its status from the registry (`-` without one)."""
    counts = per_supervisor(held)
    status = {str(e.get("supervisor")): str(e.get("status")) for e in registry or []}
    names = sorted({*counts, *(name for name, s in status.items() if s != "gone")})
    rows = []
    for name in names:
        count, latest = counts.get(name, (0, None))
        state = status.get(name, "-")
        rows.append(
            [
                Text(name, style="bold"),
                Text(state, style=REGISTRY_STYLES.get(state, "")),
                Text(str(count), justify="right"),
                Text(since(latest.isoformat(), now) + " ago" if latest else "-"),
            ]
        )
    return rows, names


class LeasesScreen(PollingScreen):
    """Held tasks, supervisors and the backlog; a stalled supervisor's leases run out first."""

    TITLE = "leases"

    def __init__(self) -> None:
        super().__init__()
        self.claimed_at: dict[tuple[int, int], str] = {}
        self._looked_up: set[str] = set()

    def compose(self) -> ComposeResult:
        """Status bar, banner, held tasks, supervisors and queue side by side, footer."""
        yield StatusBar()
        yield Banner()
        yield Static(HELD_HINT, classes="filters", id="held-hint")
        yield DataTable(id="held", cursor_type="row", zebra_stripes=True)
        with Horizontal(classes="pair"):
            yield Panel("supervisors", "supervisors")
            yield Panel("queued tasks per state", "queued")
        yield Footer()

    def on_mount(self) -> None:
        """Columns and the poll timer."""
        add_columns(self, {"held": HELD, "supervisors": SUPERVISORS, "queued": QUEUED})
        self.start_polling()

    async def fetch(self) -> None:
        """Claimed, waiting and queued tasks, the registry; claim times from the histories, a few
        a poll."""
        plane, call = self.console.plane, self.console.call
        claimed = await call(plane.tasks(status="claimed", limit=1000))
        waiting = await call(plane.tasks(status="waiting", limit=1000))
        queued = await call(plane.tasks(status="queued", limit=1000))
        if claimed is None or waiting is None or queued is None:
            return
        # A control plane without the supervisor registry answers 404: the held tasks tell then.
        registry = await call(plane.supervisors(), quiet=True)
        held = sorted(claimed + waiting, key=lease_order)
        await self._learn_claims(held)
        self.show(held, queued, registry)

    async def _learn_claims(self, held: list[dict[str, Any]]) -> None:
        missing = [
            str(t.get("token"))
            for t in held
            if (t.get("task"), t.get("attempt")) not in self.claimed_at
            and str(t.get("token")) not in self._looked_up
        ]
        for token in list(dict.fromkeys(missing))[:CLAIM_LOOKUPS_PER_POLL]:
            entries = await self.console.call(self.console.plane.history(token), quiet=True)
            self._looked_up.add(token)
            for entry in entries or []:
                data = entry.get("data") or {}
                if entry.get("kind") == "task_claimed" and isinstance(data, dict):
                    self.claimed_at[(data.get("task"), data.get("attempt"))] = entry.get("at")  # type: ignore[index]  # JSON ints
        for t in held:
            # A task claimed again after a lookup gets looked up again.
            if (t.get("task"), t.get("attempt")) not in self.claimed_at:
                self._looked_up.discard(str(t.get("token")))

    def show(
        self,
        held: list[dict[str, Any]],
        queued: list[dict[str, Any]],
        registry: list[dict[str, Any]] | None = None,
    ) -> None:
        """Fill the held tasks and the two panels."""
        now = self.console.now()
        rows = [self._held_row(t, now) for t in held]
        fill(self.query_one("#held", DataTable), rows, [str(t.get("task")) for t in held])
        hint = HELD_HINT if held else "No task is held: no supervisor is running a routine."
        self.query_one("#held-hint", Static).update(hint)
        panel = self.query_one("#supervisors-panel", Panel)
        panel.show(*supervisor_rows(held, registry, now), NO_SUPERVISOR)
        self._show_queue(queued, now)

    def _held_row(self, task: dict[str, Any], now: datetime) -> list[Text]:
        claimed = self.claimed_at.get((task.get("task"), task.get("attempt")))  # type: ignore[arg-type]  # JSON ints
        return [
            Text(str(task.get("task")), justify="right"),
            Text(str(task.get("token")), style="bold"),
            Text(str(task.get("state")), style="cyan"),
            Text(str(task.get("attempt")), justify="right"),
            status_text(task.get("status"), TASK_STYLES),
            Text(str(task.get("claimed_by") or "")),
            lease_bar(task.get("lease_until"), now),
            Text(since(claimed, now) + " ago" if claimed else "?", style="dim"),
        ]

    def _show_queue(self, queued: list[dict[str, Any]], now: datetime) -> None:
        stats = (self.console.stats or {}).get("states") or {}
        oldest = oldest_per_state(queued)
        names = [n for n in graph_states(self.console.graph) if (stats.get(n) or {}).get("queued")]
        names += [n for n in oldest if n not in names]
        rows = []
        for name in names:
            count = (stats.get(name) or {}).get("queued", 0)
            at = oldest.get(name) or oldest.get(name.split("/")[-1])
            rows.append(
                [
                    Text(name, style="cyan"),
                    Text(str(count), justify="right"),
                    Text(since(at, now) if at else "?", justify="right"),
                ]
            )
        self.query_one("#queued-panel", Panel).show(rows, names, NO_QUEUE)
