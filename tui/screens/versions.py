"""`v`: the versions of the workflow on record and their live tokens, as
`stateous versions` lists them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from stateous.model.versions import digits, short
from stateous.tui.format import local_time
from stateous.tui.versions import live_versions
from stateous.tui.widgets import Banner, StatusBar
from stateous.tui.widgets.polling import PollingScreen
from stateous.tui.widgets.tables import add_columns, fill

COLUMNS = (
    ("checksum", "checksum"),
    ("structure", "structure"),
    ("current", "current"),
    ("first served", "first"),
    ("live tokens", "live"),
)
NONE = "No version on record: this control plane is older than versions; upgrade it to see them."


def version_row(row: Mapping[str, Any]) -> list[Text]:
    """One version: 12 hex digits of its checksum and structure, yes or no, when it was first
    served (local time), its live top tokens."""
    current = row.get("current") is True
    live = row.get("live")
    return [
        Text(digits(row.get("checksum"), 12), style="bold"),
        Text(digits(row.get("structure"), 12), style="dim"),
        Text("yes" if current else "no", style="green" if current else ""),
        Text(local_time(row.get("first_served_at"), with_date=True)),
        Text(f"{live:,}" if isinstance(live, int) else "?", justify="right"),
    ]


def versions_hint(rows: Sequence[Mapping[str, Any]]) -> str:
    """`2 versions, 2 with live tokens; new tokens start on 77ef12ab (M on a token: to it)`."""
    current = next((short(r.get("checksum")) for r in rows if r.get("current") is True), "?")
    noun = "version" if len(rows) == 1 else "versions"
    return (
        f"{len(rows)} {noun}, {live_versions(rows)} with live tokens; new tokens start on "
        f"{current} (M on a token moves it there)"
    )


class VersionsScreen(PollingScreen):
    """The versions, newest first: checksum, structure, current, first served, live tokens."""

    TITLE = "versions"
    AUTO_FOCUS = "#versions"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back")]

    def compose(self) -> ComposeResult:
        """Status bar, banner, a hint, the versions, footer."""
        yield StatusBar()
        yield Banner()
        yield Static("", classes="filters", id="versions-hint")
        yield DataTable(id="versions", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        """Columns, then poll."""
        add_columns(self, {"versions": COLUMNS})
        self.start_polling()

    async def fetch(self) -> None:
        """`GET /workflow/versions`."""
        found = await self.console.call(self.console.plane.versions())
        if found is None:
            return
        rows = [row for row in found if isinstance(row, dict)]
        keys = [str(row.get("checksum")) for row in rows]
        fill(self.query_one("#versions", DataTable), [version_row(r) for r in rows], keys)
        self.query_one("#versions-hint", Static).update(versions_hint(rows) if rows else NONE)

    def action_back(self) -> None:
        """Back to the screen below."""
        self.dismiss()
