"""`?`: the keys of the current screen and of the whole console, read from their bindings.

The list is built from the same `BINDINGS` the footer draws from, so that it cannot drift from
them: the screen's own (with the hidden ones, which have no room in the footer), the console's,
and any other key the footer shows (Textual's command palette, a focused widget's).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, NamedTuple

from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from stateous.tui.screens.read_only import READ_ONLY, acts, read_only
from stateous.tui.unexpected import GuardedModal

OURS = "stateous."
"""The module prefix of the console's own classes (Textual's bindings are not ours to list)."""

LONGER = {"command_palette": "the command palette: every action by name, and the themes"}
"""A longer text for a key whose footer description is one word."""


class HelpRow(NamedTuple):
    """One key of the help: as written (`n escape`), what it does, its action, and where."""

    key: str
    does: str
    action: str
    everywhere: bool


class HelpScreen(GuardedModal[bool]):
    """The keys of the screen below it, then the console's own keys."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "Close")]

    def __init__(self, below: Screen[Any]) -> None:
        super().__init__()
        self.below = below
        self.rows = help_rows(below, below.app)
        """Each key shown, the screen's first."""

    def compose(self) -> ComposeResult:
        """One table of keys."""
        with VerticalScroll(classes="dialog"):
            yield Static(self._table(), id="help")

    def _table(self) -> Table:
        table = Table(title=f"{self.below.title or 'console'}: keys", expand=True, box=None)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("does")
        for before, row in zip([None, *self.rows], self.rows, strict=False):
            if before is not None and before.everywhere != row.everywhere:
                table.add_section()  # a rule between this screen's keys and the console's
            table.add_row(row.key, row.does)
        return table

    def action_close(self) -> None:
        """Back to the screen."""
        self.dismiss(True)


def key_text(binding: Binding) -> str:
    """A binding's keys as the help writes them: its `key_display`, else each key by name."""
    return binding.key_display or " ".join(key.strip() for key in binding.key.split(","))


def declared(owner: type[object]) -> list[Binding]:
    """The bindings with a description that the console's own classes of `owner` declare."""
    return [
        binding
        for cls in owner.__mro__
        if cls.__module__.startswith(OURS)
        for binding in vars(cls).get("BINDINGS", [])
        if isinstance(binding, Binding) and binding.description
    ]


def footer_bindings(screen: Screen[Any], app: App[Any]) -> list[ActiveBinding]:
    """The keys `screen`'s footer shows now: the bindings shown, and the command palette's."""
    active = screen.active_bindings
    shown = [binding for binding in active.values() if binding.binding.show]
    palette = active.get(app.COMMAND_PALETTE_BINDING)
    if app.ENABLE_COMMAND_PALETTE and palette is not None and palette not in shown:
        shown.append(palette)
    return shown


def help_rows(screen: Screen[Any], app: App[Any]) -> list[HelpRow]:
    """The keys of `screen`, then the console's, then any other key its footer shows."""
    rows: list[HelpRow] = []
    seen: set[str] = set()
    keys: set[str] = set()

    def add(bindings: Iterable[Binding], everywhere: bool) -> None:
        for binding in bindings:
            if binding.action in seen or binding.group == READ_ONLY:
                continue  # a key's `read only` twin: the key's own row says it
            if key_text(binding) in keys:
                continue  # the console's key that this screen's own key shadows (`s`)
            seen.add(binding.action)
            keys.add(key_text(binding))
            does = LONGER.get(binding.action) or binding.tooltip or binding.description
            if acts(binding.action) and read_only(app):
                does = f"{does} (read only)"
            rows.append(HelpRow(key_text(binding), does, binding.action, everywhere))

    add(declared(type(screen)), everywhere=False)
    add(declared(type(app)), everywhere=True)
    for active in footer_bindings(screen, app):
        add([active.binding], everywhere=active.node is app)
    return sorted(rows, key=lambda row: row.everywhere)
