"""The header bar: URL, workflow and checksum, connection state, tokens by status."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from stateous.client import Page
from stateous.tui.console import Console
from stateous.tui.format import STATUS_STYLES, STATUSES
from stateous.tui.jobs import job_status_line
from stateous.tui.versions import live_versions, versions_of
from stateous.tui.widgets.states import error_colour, unserved_states

INBOX_LIMIT = 100
"""The most inbox entries the console asks for a poll (one page of `GET /inbox`); when more
wait, the answer's `Link` header says so and the header shows `inbox 100+`."""


def short_checksum(checksum: object) -> str:
    """`sha256:` and the first 8 hex digits: enough to tell two graph files apart."""
    text = str(checksum or "?")
    return text[:15]


class StatusBar(Static):
    """One or two lines at the top of every screen, kept current from the app's polls."""

    DEFAULT_CSS = """
    StatusBar {
        height: auto;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    def on_mount(self) -> None:
        """Follow the app's health, stats and connection state."""
        self.watch(self.app, "health", self._redraw)
        self.watch(self.app, "stats", self._redraw)
        self.watch(self.app, "unreachable", self._redraw)
        self.watch(self.app, "inbox", self._redraw)
        self.watch(self.app, "job", self._redraw)

    _shown: Text | None = None

    def _redraw(self, _value: object = None) -> None:
        app: Console = self.app  # type: ignore[assignment]  # the console is the only app
        text = render_status(
            app.plane.url,
            app.health,
            app.stats,
            app.unreachable,
            inbox=app.inbox,
            error=error_colour(self.app.current_theme),
            job=app.job,
        )
        # An update lays the screen out again: only when the bar really changed.
        if self._shown is None or text != self._shown:
            self._shown = text
            self.update(text)


def render_status(
    url: str,
    health: dict[str, Any] | None,
    stats: dict[str, Any] | None,
    unreachable: str | None,
    *,
    inbox: list[dict[str, Any]] | None = None,
    error: str = "red",
    job: dict[str, Any] | None = None,
) -> Text:
    """The bar's text: `URL  workflow sha256:…  ● connected  ⚠ no supervisor for review`, then
    `active 3  paused 1 …  versions 2  inbox 2` (versions only while more than one has live
    tokens)."""
    text = Text()
    text.append(url, style="bold")
    if health:
        text.append(f"  {health.get('workflow', '?')} ", style="cyan")
        text.append(short_checksum(health.get("checksum")), style="dim")
    if unreachable is not None:
        text.append("  ● unreachable", style="bold red")
    elif health is None:
        text.append("  ○ connecting", style="dim")
    else:
        text.append("  ● connected", style="green")
        unserved = unserved_states(stats)
        if unserved:
            text.append(f"  ⚠ no supervisor for {', '.join(unserved)}", style=f"bold {error}")
    counts = (stats or {}).get("tokens")
    if isinstance(counts, dict):
        text.append("\n")
        for status in STATUSES:
            text.append(f"{status} ", style=STATUS_STYLES.get(status, ""))
            text.append(f"{counts.get(status, 0)}  ", style="bold")
        # Only while tokens live on more than one version.
        live = live_versions(versions_of(stats))
        if live > 1:
            text.append("versions ", style="cyan")
            text.append(f"{live}  ", style="bold")
    if inbox is not None:
        text.append("\n" if not isinstance(counts, dict) else "")
        text.append("inbox ", style="magenta" if inbox else "dim")
        # The console reads one page of INBOX_LIMIT entries: a next page is shown as `100+`.
        more = "+" if isinstance(inbox, Page) and inbox.next is not None else ""
        text.append(f"{len(inbox)}{more}", style="bold" if inbox else "dim")
    if job is not None:  # the bulk job this console started
        running = job.get("status") == "running"
        text.append("  " + job_status_line(job), style="bold yellow" if running else "dim")
    return text
