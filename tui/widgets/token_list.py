"""A fast list of rows with a cursor: only the lines on screen are ever rendered.

The tokens screen shows a page of 100 tokens, and more pages as the operator scrolls to them,
and redraws them at every poll; a DataTable measures and lays out every cell, which took seconds
for 1000 rows on a small machine. This widget keeps plain rows and draws the visible lines
(Textual's line API), so a poll or a key press costs the same with 10 rows or 1000. It says when
the cursor reaches the last row (`AtEnd`), so that the screen can load the next page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

Cell = Text | Callable[[], Text]
"""A cell, or a function that makes it when the row is drawn (a time that moves on)."""
Row = tuple[str, list[Cell]]
"""A row: its key and its cells."""


class TokenList(ScrollView, can_focus=True):
    """Rows of cells in columns of fixed width, but the first and the last (ids), which fit their
    longest text; a header line, and a cursor row."""

    DEFAULT_CSS = """
    TokenList {
        height: 1fr;
        background: $surface;
    }
    TokenList > .token-list--header {
        text-style: bold;
        color: $text-accent;
    }
    TokenList > .token-list--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"token-list--header", "token-list--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    cursor: reactive[int] = reactive(0)
    """The index of the cursor row."""

    class Selected(Message):
        """Enter on a row."""

        def __init__(self, token_list: TokenList, key: str) -> None:
            super().__init__()
            self.token_list = token_list
            self.key = key

        @property
        def control(self) -> TokenList:
            """The list the row belongs to (for `@on(..., "#id")`)."""
            return self.token_list

    class AtEnd(Message):
        """The operator moved the cursor onto the last row, or on past it (`down`, `pagedown`,
        `end`, a click): the rows after it may be loaded."""

        def __init__(self, token_list: TokenList) -> None:
            super().__init__()
            self.token_list = token_list

        @property
        def control(self) -> TokenList:
            """The list whose end was reached (for `@on(..., "#id")`)."""
            return self.token_list

    def __init__(self, columns: tuple[tuple[str, str, int], ...], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.base_columns = columns
        self.columns = columns
        self.rows: list[Row] = []
        self._index: dict[str, int] = {}
        self._width = sum(width + 1 for _, _, width in columns)
        # Drawn lines by (row index, under the cursor): a key press redraws from here.
        self._strips: dict[tuple[int, bool], Strip] = {}

    # ------------------------------------------------------------------ data

    @property
    def keys(self) -> list[str]:
        """The keys of the rows, in order."""
        return [key for key, _ in self.rows]

    @property
    def row_count(self) -> int:
        """How many rows there are."""
        return len(self.rows)

    @property
    def cursor_key(self) -> str | None:
        """The key of the cursor row, or None when there are no rows."""
        return self.rows[self.cursor][0] if self.rows else None

    def row(self, key: str) -> list[Text]:
        """The cells of the row `key`, as they would be drawn now."""
        return [cell() if callable(cell) else cell for cell in self.rows[self._index[key]][1]]

    def set_rows(self, rows: list[Row]) -> None:
        """Show `rows`, keeping the cursor on the same key when it is still there."""
        selected = self.cursor_key
        self.rows = rows
        self._index = {key: n for n, (key, _) in enumerate(rows)}
        self._strips.clear()
        self.virtual_size = Size(self._width, len(rows) + 1)
        self._fit()
        if selected in self._index:
            self.cursor = self._index[selected]
        else:
            self.cursor = min(self.cursor, max(0, len(rows) - 1))
        self.refresh()

    def set_columns(self, columns: tuple[tuple[str, str, int], ...]) -> None:
        """Show these columns instead (the rows set next must have a cell for each)."""
        if columns == self.base_columns:
            return
        self.base_columns = self.columns = columns
        self._width = sum(width + 1 for _, _, width in columns)
        self._strips.clear()
        self._fit()
        self.refresh()

    def move_to(self, key: str) -> None:
        """Put the cursor on the row `key`."""
        if key in self._index:
            self.cursor = self._index[key]

    # ------------------------------------------------------------------ drawing

    def render_line(self, y: int) -> Strip:
        """Line `y` of the widget: the header, or the row under it after scrolling."""
        scroll_x, scroll_y = self.scroll_offset
        if y == 0:
            cells: list[Cell] = [Text(label) for label, _, _ in self.columns]
            style = self.get_component_rich_style("token-list--header")
        else:
            index = scroll_y + y - 1
            if index >= len(self.rows):
                return Strip.blank(self.size.width, self.rich_style)
            under = index == self.cursor and self.has_focus
            strip = self._strips.get((index, under))
            if strip is None:
                style = self.get_component_rich_style("token-list--cursor") if under else Style()
                strip = self._strips[(index, under)] = self._strip(self.rows[index][1], style)
            return strip.crop(scroll_x, scroll_x + self.size.width)
        return self._strip(cells, style).crop(scroll_x, scroll_x + self.size.width)

    def _strip(self, cells: list[Cell], style: Style) -> Strip:
        segments: list[Segment] = []
        base = self.rich_style + style
        for cell, (_, _, width) in zip(cells, self.columns, strict=False):
            text = cell() if callable(cell) else cell.copy()
            text.truncate(width, overflow="ellipsis", pad=True)
            for piece in text.render(self.app.console):
                segments.append(Segment(piece.text, base + piece.style if piece.style else base))
            segments.append(Segment(" ", base))
        return Strip(segments).extend_cell_length(max(self.size.width, self._width), base)

    def on_resize(self) -> None:
        """Fit the columns to the new width, and draw again."""
        self._fit()

    def _fit(self) -> None:
        """Size the first and the last column (ids) to their longest text, within the room.

        The ids are what an operator reads; a column as wide as the widest id shows each whole
        and leaves the rest of the line to the others, however long or short the ids are.
        """
        columns = list(self.base_columns)
        for index in (0, len(columns) - 1):
            label, key, base = columns[index]
            others = sum(w + 1 for n, (_, _, w) in enumerate(columns) if n != index)
            room = max(base, self.size.width - 2 - others - 1)
            columns[index] = (label, key, min(self._content_width(index), room))
        if tuple(columns) != self.columns:
            self.columns = tuple(columns)
            self._width = sum(width + 1 for _, _, width in self.columns)
            self.virtual_size = Size(self._width, len(self.rows) + 1)
            self._strips.clear()
            self.refresh()

    def _content_width(self, index: int) -> int:
        """The widest text of column `index`: its label or a cell (one drawn late counts not)."""
        widest = len(self.base_columns[index][0])
        for _, cells in self.rows:
            cell = cells[index] if index < len(cells) else None
            if isinstance(cell, Text):
                widest = max(widest, cell.cell_len)
        return widest

    def watch_cursor(self, old: int, new: int) -> None:
        """Redraw the two rows and keep the cursor in view."""
        self.refresh()
        top = self.scroll_offset.y
        visible = max(1, self.size.height - 1)
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif new >= top + visible:
            self.scroll_to(y=new - visible + 1, animate=False)

    def on_focus(self) -> None:
        """Show the cursor."""
        self.refresh()

    def on_blur(self) -> None:
        """Hide the cursor."""
        self.refresh()

    # ------------------------------------------------------------------ keys

    def action_move(self, step: int) -> None:
        """Move the cursor by `step` rows; onto or past the last row says `AtEnd`."""
        if self.rows:
            self.cursor = max(0, min(len(self.rows) - 1, self.cursor + step))
        if step > 0:
            self._reached_end()

    def action_page(self, direction: int) -> None:
        """Move the cursor by one screen."""
        self.action_move(direction * max(1, self.size.height - 2))

    def action_jump(self, index: int) -> None:
        """Move the cursor to the first (0) or the last (-1) row."""
        if self.rows:
            self.cursor = index % len(self.rows)
        if index < 0:
            self._reached_end()

    def _reached_end(self) -> None:
        """Say `AtEnd` when the cursor is on the last row (or there is none)."""
        if self.cursor >= len(self.rows) - 1:
            self.post_message(self.AtEnd(self))

    def action_select(self) -> None:
        """Open the cursor row."""
        if self.rows:
            self.post_message(self.Selected(self, self.rows[self.cursor][0]))

    def on_click(self, event: object) -> None:
        """A click puts the cursor on the clicked row."""
        offset = getattr(event, "y", None)
        if isinstance(offset, int) and offset > 0:
            index = self.scroll_offset.y + offset - 1
            if index < len(self.rows):
                self.cursor = index
                self._reached_end()
