"""`?`: the keys of the current screen and of the whole console."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

GLOBAL_KEYS = (
    ("t", "the tokens screen"),
    ("l", "the leases screen"),
    ("o", "supervisors and outboxes"),
    ("ctrl+p", "the command palette: every action by name"),
    ("?", "this help"),
    ("q", "quit"),
)


class HelpScreen(ModalScreen[bool]):
    """The keys of the screen below it, then the console's own keys."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "Close")]

    def __init__(self, below: Screen[object]) -> None:
        super().__init__()
        self.below = below
        self.rows = help_rows(below)
        """(key, what it does) for each key shown."""

    def compose(self) -> ComposeResult:
        """One table of keys."""
        with VerticalScroll(classes="dialog"):
            yield Static(self._table(), id="help")

    def _table(self) -> Table:
        table = Table(title=f"{self.below.title or 'console'}: keys", expand=True, box=None)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("does")
        for key, text in self.rows:
            table.add_row(key, text)
        return table

    def action_close(self) -> None:
        """Back to the screen."""
        self.dismiss(True)


def help_rows(screen: Screen[object]) -> list[tuple[str, str]]:
    """The keys of `screen` (from its bindings), then the console's own keys."""
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for binding in getattr(screen, "BINDINGS", []):
        if isinstance(binding, Binding) and binding.description:
            key = binding.key_display or binding.key.split(",")[0]
            if key not in seen:
                seen.add(key)
                rows.append((key, binding.description))
    return [*rows, *GLOBAL_KEYS]
