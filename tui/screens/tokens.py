"""`t`: the tokens screen, with the states panel, filters and search."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import datetime
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Input, Static

from stateous.client import Page, Refused
from stateous.client.search import shown_pairs
from stateous.model.bulk_statuses import acting_filter, why_text
from stateous.model.history import display_state
from stateous.model.versions import short
from stateous.tui.api import PAGE, refusal_line
from stateous.tui.format import STATUSES, duration, parse_time, status_text
from stateous.tui.schema import state_key
from stateous.tui.screens.bulk import BulkConfirmScreen
from stateous.tui.screens.migrate import WRAPS, selection_refusals
from stateous.tui.screens.repair import REPAIR_BINDINGS, RepairScreen
from stateous.tui.screens.steering import STEERING_BINDINGS, SteeringScreen
from stateous.tui.search import Search, parse_search
from stateous.tui.versions import (
    live_versions,
    token_version,
    version_names,
    versions_of,
)
from stateous.tui.widgets import Banner, StatesPanel, StatusBar
from stateous.tui.widgets.polling import PollingScreen
from stateous.tui.widgets.token_list import Cell, TokenList

ON_EACH = "those each can act on (p active, r paused, c f active or paused, R failed)"
"""With no status filter, what a selection's keys act on (`ACTS_ON`, as in the CLI)."""

Asked = tuple[str | None, str | None, str, tuple[tuple[str, Any], ...]]
"""What a listing asks the control plane: status, state, id prefix, context keys searched."""

# (label, key, width): fixed widths, so that drawing a row never needs the others; the id and
# parent columns fit their longest id instead (this width is what they keep when room is short).
COLUMNS = (
    ("id", "id", 26),
    ("state", "state", 12),
    ("visit", "visit", 5),
    ("status", "status", 9),
    ("in state", "age", 8),
    ("parent", "parent", 12),
)
VERSION = ("version", "version", 8)
"""The version column, before the parent, while tokens live on several versions."""
WITH_VERSION = (*COLUMNS[:-1], VERSION, COLUMNS[-1])


def arrange(
    tokens: list[dict[str, Any]], *, state: str | None, prefix: str, hide_children: bool
) -> list[tuple[dict[str, Any], int]]:
    """The rows to show, with their depth: filtered, each child just below its parent.

    A child whose parent is not shown stays where the listing put it, at the top level.
    """
    shown = [
        t
        for t in tokens
        if str(t.get("token", "")).startswith(prefix)
        and (state is None or state_key(t) == state)
        and not (hide_children and isinstance(t.get("parent"), str))
    ]
    ids = {str(t.get("token")) for t in shown}
    children: dict[str, list[dict[str, Any]]] = {}
    for t in shown:
        parent = t.get("parent")
        if isinstance(parent, str) and parent in ids:
            children.setdefault(parent, []).append(t)
    rows: list[tuple[dict[str, Any], int]] = []

    def place(token: dict[str, Any], depth: int) -> None:
        rows.append((token, depth))
        for child in children.get(str(token.get("token")), []):
            place(child, depth + 1)

    for t in shown:
        parent = t.get("parent")
        if not (isinstance(parent, str) and parent in ids):
            place(t, 0)
    return rows


class TokensScreen(PollingScreen, RepairScreen):
    """Every token, most recently moved first, with the states panel beside it."""

    TITLE = "tokens"
    AUTO_FOCUS = "#tokens"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]  # noqa: RUF012  # Screen types it
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=False),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("h", "children", "Children"),
        Binding("asterisk", "select_all", "Select all", key_display="*"),
        *STEERING_BINDINGS,
        *REPAIR_BINDINGS,
        Binding("0", "status(None)", "All statuses", show=False),
        Binding("1", "status('active')", "Active only", show=False),
        Binding("2", "status('paused')", "Paused only", show=False),
        Binding("3", "status('completed')", "Completed only", show=False),
        Binding("4", "status('failed')", "Failed only", show=False),
        Binding("5", "status('cancelled')", "Cancelled only", show=False),
        Binding("escape", "clear", "Clear filters", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.tokens: dict[str, dict[str, Any]] = {}
        self.listing: list[dict[str, Any]] = []
        self.status_filter: str | None = None
        self.state_filter: str | None = None
        self.prefix = ""
        self.search = Search()
        """What `/` holds: the id prefix, and the context keys that find tokens."""
        self._search_refused: tuple[tuple[str, ...], str | None] | None = None
        self.hide_children = False
        self.selection: dict[str, Any] | None = None
        """With `*`: the filter whose every token `p` `r` `c` `f` `R` act on."""
        self._keys: list[str] = []
        self._fixed: dict[tuple[object, ...], list[Cell]] = {}
        self._filters_shown = ""
        self.versions: dict[str, str] | None = None
        """Each structure's version name while tokens live on several versions, else None."""
        self.loaded = False
        """True once the first listing is on screen (the benchmark waits for it)."""
        self.pages = 1
        """How many pages of `PAGE` tokens are loaded: the first, and one more each time the
        operator moves the cursor onto the last row while more follow. A poll asks for as many
        rows as are loaded, a page a request; a filter changed goes back to one page."""
        self.next_page: str | None = None
        """The cursor of the page after the loaded rows; None when no more follow."""
        self._more_asked: str | None = None

    def compose(self) -> ComposeResult:
        """Status bar, banner, filters, search, states panel and tokens, footer."""
        yield StatusBar()
        yield Banner()
        yield Static("", classes="filters", id="filters")
        yield Input(
            placeholder="id prefix, or key=value ... to find by context; enter opens an exact id",
            id="search",
        )
        with Horizontal(classes="main-row"):
            yield StatesPanel(id="states")
            yield TokenList(COLUMNS, id="tokens")
        yield Footer()

    def on_mount(self) -> None:
        """Columns, the poll timer, and the states panel following the app's stats."""
        if self.console.frozen:
            self.query_one("#search", Input).cursor_blink = False
        self.watch(self.app, "stats", self._stats_changed)
        self.watch(self.app, "graph", self._stats_changed)
        self.watch(self.app, "older", self._stats_changed)
        self._show_filters()
        self.start_polling()

    def _stats_changed(self, _value: object = None) -> None:
        console = self.console
        self.query_one(StatesPanel).show(console.graph, console.stats, console.older)
        versions = versions_of(self.console.stats)
        names = version_names(versions) if live_versions(versions) > 1 else None
        if names != self.versions:
            self.versions = names
            self._fixed.clear()
            self.query_one("#tokens", TokenList).set_columns(WITH_VERSION if names else COLUMNS)
            self.render_rows()

    # ------------------------------------------------------------------ data

    async def fetch(self) -> None:
        """`GET /tokens` with the filters, one page of `PAGE` a request, as many pages as are
        loaded (one unless the operator scrolled on); the state and id filters (and hidden
        children) apply here too, at once, while the answer is on its way."""
        asked = self.asked()
        rows: list[dict[str, Any]] = []
        after: str | None = None
        for _ in range(self.pages):
            page = await self._page(asked, after)
            if page is None or asked != self.asked():
                return  # no answer, or one to filters changed since
            rows.extend(page)
            after = page.next
            if after is None:
                break
        self._show_listing(rows, after)

    @work(exclusive=True, group="poll")
    async def load_more(self, after: str) -> None:
        """The page after the loaded rows, added below them (in the poll's group: a poll that
        comes meanwhile asks for every loaded page itself, this one too)."""
        asked = self.asked()
        page = await self._page(asked, after)
        if page is None or asked != self.asked() or after != self.next_page:
            return
        known = {str(t.get("token")) for t in self.listing}
        added = [t for t in page if str(t.get("token")) not in known]
        self._show_listing([*self.listing, *added], page.next)

    @on(TokenList.AtEnd, "#tokens")
    def _at_end(self) -> None:
        """The cursor reached the last loaded row: load the next page, once for each cursor."""
        if self.next_page is None or self._more_asked == self.next_page:
            return
        self._more_asked = self.next_page
        self.pages += 1
        self.load_more(self.next_page)

    def asked(self) -> Asked:
        """What the listing asks for now."""
        context = tuple(sorted(self.search.context.items(), key=lambda item: item[0]))
        return (self.status_filter, self.state_filter, self.prefix, context)

    def _filters_changed(self) -> None:
        """Ask again from the first page, for the filters as they are now."""
        self.pages = 1
        self.next_page = self._more_asked = None
        self.refresh_now()

    def _show_listing(self, rows: list[dict[str, Any]], after: str | None) -> None:
        self.listing = rows
        self.next_page = after
        self.tokens = {str(t.get("token")): t for t in rows}
        if len(self._fixed) > 4 * max(len(rows), 10 * PAGE):
            self._fixed.clear()  # rows of tokens long gone
        self.render_rows()
        self.loaded = True

    async def _page(self, asked: Asked, after: str | None) -> Page | None:
        """One page of the listing, or None when no usable answer came (the banner says why)."""
        status, state, prefix, context = asked
        # `state`: a child workflow's state is `<workflow>/<state>` here, its own name there.
        request = self.console.plane.token_page(status=status,
                                                state=state and state.rpartition("/")[2],
                                                prefix=prefix, context=dict(context) or None,
                                                after=after)  # fmt: skip
        return await self.console.call(self._found(request, context) if context else request)

    async def _found(self, request: Awaitable[Page], context: tuple[tuple[str, Any], ...]) -> Page:
        """The tokens whose context holds every key searched (`GET /tokens?context.KEY=JSON`);
        a refusal (a key not searchable, or one still being filled) shows in the error line
        once for these keys, and finds nothing."""
        try:
            found = await request
        except Refused as exc:
            # Keyed by the keys, not the values: typing a value is not asked about again.
            refusal = (tuple(key for key, _ in context), exc.code)
            if self._search_refused != refusal:
                self._search_refused = refusal
                self.notify(refusal_line(exc), title="refused", severity="error", timeout=8)
            return Page([])
        self._search_refused = None
        return found

    @property
    def search_text(self) -> str:
        """The context keys searched, as typed back: `customer=acme order_id=4711`."""
        return shown_pairs(self.search.context)

    def render_rows(self) -> None:
        """Show the listing (the list draws only the rows on screen)."""
        rows = arrange(
            self.listing,
            state=self.state_filter,
            prefix=self.prefix,
            hide_children=self.hide_children,
        )
        shown = [(str(t.get("token")), self._row(t, depth)) for t, depth in rows]
        self.query_one("#tokens", TokenList).set_rows(shown)
        self._keys = [key for key, _ in shown]
        self._show_filters(len(rows))

    def _row(self, token: dict[str, Any], depth: int) -> list[Cell]:
        """The cells of a token's row; kept while the token is unchanged, the age drawn late."""
        key = (str(token.get("token")), depth, token.get("state"), token.get("status"),
               token.get("visit"), token.get("parent"), token.get("entered_at"),
               token.get("structure"))  # fmt: skip
        row = self._fixed.get(key)
        if row is None:
            fixed = self._fixed_cells(token, depth)
            entered = parse_time(token.get("entered_at"))
            version = [] if self.versions is None else [self._version(token, self.versions)]
            row = self._fixed[key] = [*fixed[:4], partial(self._age, entered), *version, fixed[4]]
        return row

    @staticmethod
    def _version(token: dict[str, Any], names: dict[str, str]) -> Text:
        """The 8 hex digits of the version the token runs on."""
        return Text(token_version(token, names), style="magenta")

    def _age(self, entered: datetime | None) -> Text:
        """Time in state, computed when the row is drawn (only rows on screen are)."""
        text = "?" if entered is None else duration((self.console.now() - entered).total_seconds())
        return Text(text, justify="right")

    @staticmethod
    def _fixed_cells(token: dict[str, Any], depth: int) -> list[Text]:
        ident = str(token.get("token"))
        if depth:
            ident = "  " * (depth - 1) + "└ " + ident
        return [
            Text(ident, style="dim" if depth else "bold"),
            Text(display_state(token.get("state")), style="cyan"),
            Text(str(token.get("visit")), justify="right"),
            status_text(token.get("status")),
            Text(str(token.get("parent") or ""), style="dim"),
        ]

    def _show_filters(self, shown: int | None = None) -> None:
        parts = [
            f"status: {self.status_filter or 'all'} (0-5)",
            f"state: {self.state_filter or 'all'}",
            f"id: {self.prefix + '*' if self.prefix else 'any'} (/)",
            f"children: {'hidden' if self.hide_children else 'shown'} (h)",
        ]
        if self.search.context:
            refused = " (refused)" if self._search_refused else ""
            parts.insert(3, f"context: {self.search_text}{refused}")
        elif self.search.problem:
            parts.insert(3, f"context: {self.search.problem}")
        if shown is not None:
            found = "found" if self.search.context else "most recently moved"
            # A page at a time (issue 32): the line says when more follow than are loaded.
            more = ", more below (the last row loads them)" if self.next_page is not None else ""
            parts.append(f"{shown} of the {len(self.listing)} {found}{more}")
        if self.selection is not None:
            parts.append(f"selected: every token where {selection_text(self.selection)} (*)")
        text = " · ".join(parts)
        if text != self._filters_shown:
            self._filters_shown = text
            self.query_one("#filters", Static).update(text)

    # ------------------------------------------------------------------ selection

    def _selected_key(self) -> str | None:
        return self.query_one("#tokens", TokenList).cursor_key

    def selected_token(self) -> dict[str, Any] | None:
        """The token under the cursor."""
        key = self._selected_key()
        return self.tokens.get(key) if key is not None else None

    def show_token(self, token: dict[str, Any]) -> None:
        """Put the answered token in its row at once, then poll for the rest."""
        ident = str(token.get("token"))
        self.listing = [token if str(t.get("token")) == ident else t for t in self.listing]
        self.tokens[ident] = token
        self.render_rows()
        self.refresh_now()

    # ------------------------------------------------------------------ keys

    @on(TokenList.Selected, "#tokens")
    def action_open(self) -> None:
        """Open the selected token."""
        key = self._selected_key()
        if key is not None:
            self.open_token(key)

    def open_token(self, token: str) -> None:
        """Push the token screen of `token`."""
        self.console.open_token(token)

    @on(DataTable.RowSelected, "#states")
    def _state_chosen(self, selected: DataTable.RowSelected) -> None:
        state = str(selected.row_key.value)
        self.state_filter = None if self.state_filter == state else state
        self.render_rows()  # the rows loaded at once, then the control plane's answer
        self._filters_changed()
        self.query_one("#tokens", TokenList).focus()

    def action_status(self, status: str | None) -> None:
        """Show only the tokens of `status` (None: all)."""
        if status is not None and status not in STATUSES:
            return
        self.status_filter = status
        self._show_filters()
        self._filters_changed()

    def action_children(self) -> None:
        """Hide the child tokens, or show them again below their parents."""
        self.hide_children = not self.hide_children
        self.render_rows()

    def action_search(self) -> None:
        """Filter by id prefix, or find tokens by context keys (`customer=acme`)."""
        search = self.query_one("#search", Input)
        search.add_class("-shown")
        search.focus()

    @on(Input.Changed, "#search")
    def _prefix_changed(self, changed: Input.Changed) -> None:
        self.set_search(parse_search(changed.value))

    def set_search(self, search: Search) -> None:
        """Filter the rows loaded by `search`'s prefix at once; ask the control plane again
        when the prefix or the context keys searched changed (from the first page)."""
        before = self.asked()
        self._take_search(search)
        self.render_rows()
        if self.asked() != before:
            self._filters_changed()

    def _take_search(self, search: Search) -> None:
        if search.context != self.search.context:
            self.listing, self.tokens = [], {}  # found by other keys: none of them may match
        self.search = search
        self.prefix = search.prefix
        if not search.context:
            self._search_refused = None  # a search typed again is answered again

    @on(Input.Submitted, "#search")
    def _prefix_submitted(self, submitted: Input.Submitted) -> None:
        """Enter in the search: the keys go back to the tokens (the next key is not typed into
        the search), and an exact id (also one older than the listing reaches, when no row
        matches) or the only match opens."""
        self.query_one("#tokens", TokenList).focus()
        value = submitted.value
        if self.search.context or self.search.problem:
            value = ""  # a search by context opens only its one match
        if value and (value in self._keys or not self._keys):
            self.open_token(value)
        elif len(self._keys) == 1:
            self.open_token(self._keys[0])

    def action_clear(self) -> None:
        """Clear the id and state filters and the selection, and hide the search."""
        self.selection = None
        search = self.query_one("#search", Input)
        search.value = ""
        search.remove_class("-shown")
        before = self.asked()
        self.state_filter = None
        self._take_search(Search())
        self.render_rows()
        if self.asked() != before:
            self._filters_changed()
        self.query_one("#tokens", TokenList).focus()

    # ------------------------------------------------------------------ bulk

    def current_filter(self) -> dict[str, Any]:
        """The bulk filter of the filters shown: status, state, id prefix, context keys (top tokens
        only)."""
        found: dict[str, Any] = {}
        if self.status_filter is not None:
            found["status"] = [self.status_filter]
        if self.state_filter is not None:
            found["state"] = [self.state_filter]
        if self.prefix:
            found["prefix"] = self.prefix
        if self.search.context:
            found["context"] = dict(self.search.context)
        return found

    def action_select_all(self) -> None:
        """Select every token that matches the current filter, or clear the selection."""
        if self.selection is not None:
            self.selection = None
            self.notify("selection cleared")
        else:
            self.selection = self.current_filter()
            self.notify(
                f"every token where {selection_text(self.selection)}: p r c f R act on "
                + ("all of them" if self.status_filter else ON_EACH)
                + ", * or esc clears",
                title="selected",
            )
        self._show_filters()

    def action_steer(self, action: str) -> None:
        """Pause or resume the token under the cursor, or every selected token."""
        if self.selection is None:
            super().action_steer(action)
        else:
            self.bulk(action, self.selection)

    def action_cancel(self) -> None:
        """Cancel the token under the cursor, or every selected token."""
        if self.selection is None:
            super().action_cancel()
        else:
            self.bulk("cancel", self.selection)

    def action_fire(self) -> None:
        """Fire at the token under the cursor, or at every selected token."""
        if self.selection is None:
            super().action_fire()
        else:
            self.bulk("fire", self.selection)

    def action_retry(self) -> None:
        """Retry the failed token under the cursor, or every selected token (a bulk retry)."""
        if self.selection is None:
            super().action_retry()
        else:
            self.bulk("retry", self.selection)

    def action_move(self) -> None:
        """Move the token under the cursor; a move is never bulk (each token its own state)."""
        if self.selection is None:
            super().action_move()
        else:
            self.notify(
                "m moves one token: clear the selection (* or esc) and move the highlighted token",
                severity="warning",
            )

    def action_migrate(self) -> None:
        """Migrate the token under the cursor, or every selected token, to the current version."""
        if self.selection is None:
            super().action_migrate()
        else:
            self.bulk_migrate(self.selection)

    @work(exclusive=True, group="steer")
    async def bulk_migrate(self, selection: dict[str, Any]) -> None:
        """A dry run's count and refusals, confirm with a reason, start the job;
        a selection refused whole asks nothing, as in the CLI."""
        target = await self.current_target()
        if target is None:
            return
        to = target[1]
        selection, where = acting("migrate", selection)
        plane = self.console.plane
        preview = await self.console.call(plane.bulk("migrate", selection, dry_run=True, to=to))
        if preview is None:
            return
        matched = int(preview.get("matched") or 0)
        movable, refused = selection_refusals(preview)
        if matched == 0 or movable <= 0:
            nothing = f"no token where {where}" + (f" can migrate: {refused}" if matched else "")
            self.notify(nothing, severity="warning")
            return
        tokens = [str(t) for t in preview.get("tokens") or []]
        question = BulkConfirmScreen("migrate", matched, tokens, where, to=short(to),
                                     refused=refused)  # fmt: skip
        question.add_class(WRAPS)
        choice = await self.app.push_screen_wait(question)
        if choice is None:
            return
        job = await self.console.call(
            plane.bulk("migrate", selection, to=to, reason=choice.reason or None)
        )
        if job is not None:
            self.started(job, "migrate")

    def started(self, job: dict[str, Any], action: str) -> None:
        """Follow a job just started in the status bar; the selection is done."""
        self.console.follow_job(int(job["job"]))
        self.notify(f"bulk job {job['job']}: {action} {int(job['matched']):,} tokens", title=action)
        self.selection = None
        self._show_filters()

    @work(exclusive=True, group="steer")
    async def bulk(self, action: str, selection: dict[str, Any]) -> None:
        """Count by a dry run, confirm with a reason, start the job; the status bar follows it."""
        plane = self.console.plane
        selection, where = acting(action, selection)
        # The match does not depend on the action; a fire's dry run would need its event first.
        preview = await self.console.call(
            plane.bulk("pause" if action == "fire" else action, selection, dry_run=True)
        )
        if preview is None:
            return
        matched = int(preview.get("matched") or 0)
        if matched == 0:
            self.notify(f"no token where {where}", severity="warning")
            return
        tokens = [str(t) for t in preview.get("tokens") or []]
        question = BulkConfirmScreen(action, matched, tokens, where)
        choice = await self.app.push_screen_wait(question)
        if choice is None:
            return
        job = await self.console.call(
            plane.bulk(action, selection, event=choice.event, payload=choice.payload,
                       reason=choice.reason or None)
        )  # fmt: skip
        if job is not None:
            self.started(job, action)

    def palette_commands(self) -> list[Any]:
        """The palette's commands of this screen: filters and steering."""
        from textual.app import SystemCommand

        commands = [
            SystemCommand(
                f"Show {s} tokens", f"Filter by status ({i})", lambda s=s: self.action_status(s)
            )
            for i, s in enumerate(STATUSES, start=1)
        ]
        commands.append(
            SystemCommand(
                "Show all tokens", "Clear the status filter (0)", lambda: self.action_status(None)
            )
        )
        commands.append(
            SystemCommand(
                "Search tokens by id or context", "Id prefix, or key=value (/)", self.action_search
            )
        )
        commands.append(SystemCommand("Hide or show children", "(h)", self.action_children))
        commands.extend(steering_commands(self))
        return commands


def acting(action: str, selection: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The filter `action` is sent with, and its words: without a status, the statuses the action
    acts on (as in the CLI), `status active, state draft (the status pause acts on)`."""
    found, defaulted = acting_filter(action, selection)
    return found, selection_text(found) + (f" ({why_text(action)})" if defaulted else "")


def selection_text(selection: dict[str, Any]) -> str:
    """`status active, state draft, id T-*, context customer=acme`, or `any` for the empty
    filter."""
    parts = []
    if selection.get("status"):
        parts.append("status " + ", ".join(selection["status"]))
    if selection.get("state"):
        parts.append("state " + ", ".join(selection["state"]))
    if selection.get("prefix"):
        parts.append(f"id {selection['prefix']}*")
    if selection.get("context"):
        parts.append(f"context {shown_pairs(selection['context'])}")
    return ", ".join(parts) or "any (all top tokens)"


def steering_commands(screen: SteeringScreen) -> list[Any]:
    """The steering actions by name, for the palette."""
    from textual.app import SystemCommand

    return [
        SystemCommand("Pause the token", "(p)", lambda: screen.action_steer("pause")),
        SystemCommand("Resume the token", "(r)", lambda: screen.action_steer("resume")),
        SystemCommand("Cancel the token", "(c), after a confirmation", screen.action_cancel),
        SystemCommand(
            "Fire an event", "(f) a form checked against the payload schema", screen.action_fire
        ),
        SystemCommand("Start a token", "(s)", screen.action_start),
    ]
