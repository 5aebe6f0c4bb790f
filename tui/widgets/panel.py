"""`Panel`: a bordered, titled table that says in one line when it has nothing to show."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from stateous.tui.widgets.tables import fill


class Panel(Vertical):
    """A titled box holding the DataTable `#<table>`; with no rows, a dim line replaces it.

    An empty box reads as "still loading" or "broken"; the line says there is really nothing.
    """

    DEFAULT_CSS = """
    Panel {
        width: 1fr;
        height: 1fr;
        border: round $secondary;
    }
    Panel > DataTable {
        height: 1fr;
    }
    Panel > .empty {
        display: none;
        padding: 0 1;
        color: $text-muted;
    }
    Panel.-empty > DataTable {
        display: none;
    }
    Panel.-empty > .empty {
        display: block;
    }
    """

    def __init__(self, title: str, table: str) -> None:
        super().__init__(id=f"{table}-panel")
        self.border_title = title
        self.table_id = table

    def compose(self) -> ComposeResult:
        """The table and the line shown in its place when it is empty."""
        yield DataTable(id=self.table_id, cursor_type="row")
        yield Static("", classes="empty")

    def show(self, rows: list[list[Text]], keys: list[str], empty: str) -> None:
        """Fill the table with `rows`; with none, show `empty` instead."""
        fill(self.query_one(DataTable), rows, keys)
        self.set_class(not rows, "-empty")
        self.query_one(".empty", Static).update(empty if not rows else "")
