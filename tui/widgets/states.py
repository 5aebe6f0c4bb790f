"""The states panel: each state in graph order with its active, paused and queued counts, and
`no supervisor` under a state whose tasks are queued while no live supervisor serves it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.theme import Theme
from textual.widgets import DataTable

from stateous.tui.versions import graph_state_names

ALL_STATES = "*"


def graph_states(graph: dict[str, Any] | None) -> list[str]:
    """The states of the graph in order: the main workflow's, then `<workflow>/<state>`."""
    return graph_state_names(graph)


def unserved_states(stats: dict[str, Any] | None) -> list[str]:
    """The states with queued tasks and no live supervisor, in `/stats` order.

    A control plane without the registry sends no `supervisors` count: nothing is unserved then.
    """
    states = (stats or {}).get("states")
    if not isinstance(states, dict):
        return []
    return [
        str(name)
        for name, entry in states.items()
        if isinstance(entry, dict)
        and entry.get("supervisors") == 0
        and int(entry.get("queued", 0) or 0) > 0
    ]


def state_versions(
    current: list[str], per_state: Mapping[str, Any], older: Mapping[str, str]
) -> dict[str, str]:
    """The states beyond the current version's to show, each with its version's 8 hex digits:
    those of `older`, then any other state `/stats` counts live tokens or queued tasks in
    (`?`: a version whose graph is not known here)."""
    shown = set(current)
    found = {name: version for name, version in older.items() if name not in shown}
    for name, entry in per_state.items():
        if name in shown or name in found or not isinstance(entry, Mapping):
            continue
        if any(int(entry.get(k, 0) or 0) for k in ("active", "paused", "queued")):
            found[str(name)] = "?"
    return found


def error_colour(theme: Theme | None) -> str:
    """The theme's error colour, as a Rich style (red when the theme names none)."""
    return (theme.error if theme is not None else None) or "red"


def _count(value: int) -> Text:
    return Text(str(value), style="bold" if value else "dim", justify="right")


class StatesPanel(DataTable[Any]):
    """A table of states; selecting one filters the tokens by it (select it again to clear)."""

    DEFAULT_CSS = """
    StatesPanel {
        width: 34;
        height: 1fr;
        border: round $secondary;
        border-title-color: $text;
    }
    """

    def on_mount(self) -> None:
        """Set up the columns."""
        self.border_title = "states"
        self.cursor_type = "row"
        self.add_column("state", key="state")
        self.add_column("act", key="active")
        self.add_column("pau", key="paused")
        self.add_column("que", key="queued")

    _marked: frozenset[str] = frozenset()
    _versions: dict[str, str] = {}  # noqa: RUF012  # replaced whole, never changed in place

    def show(
        self,
        graph: dict[str, Any] | None,
        stats: dict[str, Any] | None,
        older: Mapping[str, str] | None = None,
    ) -> None:
        """Redraw the counts; rows are rebuilt only when the states or the marks change.

        `older`: the states that only older versions with live tokens have, with the 8 hex
        digits of their version; they follow the current version's, marked with it. A state
        that `/stats` counts live tokens in and no graph known here has shows too, marked `?`.
        """
        per_state = (stats or {}).get("states") or {}
        versions = state_versions(graph_states(graph), per_state, older or {})
        names = [*graph_states(graph), *versions]
        marked = frozenset(unserved_states(stats))
        keys = [str(row.value) for row in self.rows]
        if keys != names or marked != self._marked or versions != self._versions:
            self._rebuild(names, per_state, marked, versions)
            return
        for name in names:
            old = self.get_row(name)
            cells = self._counts(per_state.get(name))
            for index, (column, cell) in enumerate(
                zip(("active", "paused", "queued"), cells, strict=True), start=1
            ):
                # Unchanged counts are left alone: each update redraws the table.
                if str(old[index]) != cell.plain:
                    self.update_cell(name, column, cell)

    def _rebuild(
        self,
        names: list[str],
        per_state: dict[str, Any],
        marked: frozenset[str],
        versions: dict[str, str],
    ) -> None:
        cursor = self.cursor_row
        self._marked = marked
        self._versions = versions
        self.clear()
        error = f"bold {error_colour(self.app.current_theme)}"
        for name in names:
            label = Text(name)
            if name in versions:
                label.append(f" {versions[name]}", style="magenta")
            if name in marked:
                label.append("\nno supervisor", style=error)
            counts = self._counts(per_state.get(name))
            self.add_row(label, *counts, key=name, height=2 if name in marked else 1)
        if names:
            self.move_cursor(row=min(cursor, len(names) - 1), animate=False)

    @staticmethod
    def _counts(entry: object) -> list[Text]:
        counts = entry if isinstance(entry, dict) else {}
        return [_count(int(counts.get(k, 0) or 0)) for k in ("active", "paused", "queued")]
