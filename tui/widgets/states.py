"""The states panel: each state in graph order with its active, paused and queued counts."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

ALL_STATES = "*"


def graph_states(graph: dict[str, Any] | None) -> list[str]:
    """The states of the graph in order: the main workflow's, then `<workflow>/<state>`."""
    if not graph:
        return []
    names = [str(s) for s in graph.get("states", {})]
    for workflow, body in (graph.get("workflows") or {}).items():
        if isinstance(body, dict):
            names.extend(f"{workflow}/{s}" for s in body.get("states", {}))
    return names


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

    def show(self, graph: dict[str, Any] | None, stats: dict[str, Any] | None) -> None:
        """Redraw the counts; rows are rebuilt only when the graph's states change."""
        names = graph_states(graph)
        per_state = (stats or {}).get("states") or {}
        keys = [str(row.value) for row in self.rows]
        if keys != names:
            self.clear()
            for name in names:
                self.add_row(name, *self._counts(per_state.get(name)), key=name)
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

    @staticmethod
    def _counts(entry: object) -> list[Text]:
        counts = entry if isinstance(entry, dict) else {}
        return [_count(int(counts.get(k, 0) or 0)) for k in ("active", "paused", "queued")]
