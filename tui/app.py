"""The console application and `make_console`, the one factory the command and the tests use."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import httpx
from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.reactive import var
from textual.screen import Screen
from textual.worker import WorkerFailed

from stateous.client import ClientError, Refused
from stateous.model.environment import value
from stateous.tui.api import ControlPlane, refusal_line, trouble
from stateous.tui.console import Console
from stateous.tui.screens.bulk import BulkScreen
from stateous.tui.screens.help import HelpScreen
from stateous.tui.screens.inbox import InboxScreen
from stateous.tui.screens.leases import LeasesScreen
from stateous.tui.screens.outboxes import OutboxesScreen
from stateous.tui.screens.read_only import acts
from stateous.tui.screens.schedules import SchedulesScreen
from stateous.tui.screens.token import TokenScreen
from stateous.tui.screens.tokens import TokensScreen
from stateous.tui.screens.versions import VersionsScreen
from stateous.tui.settings import Settings, save_settings
from stateous.tui.unexpected import TITLE, LogFile, error_line, log_error
from stateous.tui.versions import checksum_of, current_version, older_states, versions_of
from stateous.tui.widgets.status_bar import INBOX_LIMIT

T = TypeVar("T")

SCREEN_KEYS = Binding.Group("screens")
"""The footer's label of the keys that open a screen."""
Clock = Callable[[], datetime]


CRASH_POINT = "console_start"
"""`STATEOUS_DEBUG_POINT=console_start` ends the console on an error as it starts (the tests of
its exit code and its log run the real command)."""


class CrashPoint(RuntimeError):
    """The error of the armed crash point."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _acts(callback: Callable[..., Any]) -> bool:
    """Whether a palette command runs an action that acts (`action_retry`, ...)."""
    return acts(getattr(callback, "__name__", "").removeprefix("action_"))


class ConsoleApp(App[None]):
    """The operator console: tokens, one token, leases, supervisors and outboxes."""

    CSS_PATH = "app.tcss"
    TITLE = "Stateous console"
    # Named screens, installed once and switched between (not modes: under Textual 8.2.8 a
    # mode's screen holding an Input stops taking keys in a headless run, as snapshots use).
    SCREENS: ClassVar[dict[str, Callable[[], Screen[Any]]]] = {
        "tokens": TokensScreen,
        "leases": LeasesScreen,
        "outboxes": OutboxesScreen,
        "inbox": InboxScreen,
        "bulk": BulkScreen,
        "schedules": SchedulesScreen,
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        # The tooltip is the longer text of the `?` help (and of the footer's hover).
        # The screens' keys share one label in the footer (`t l o i b v screens`), so that a
        # screen's own keys and `? q` fit beside them at 160 columns; `?` names each.
        Binding("t", "show('tokens')", "Tokens", tooltip="the tokens screen", group=SCREEN_KEYS),
        Binding("l", "show('leases')", "Leases", tooltip="the leases screen", group=SCREEN_KEYS),
        Binding(
            "o",
            "show('outboxes')",
            "Outboxes",
            tooltip="supervisors and outboxes",
            group=SCREEN_KEYS,
        ),
        Binding(
            "i",
            "show('inbox')",
            "Inbox",
            tooltip="the tokens waiting for a person",
            group=SCREEN_KEYS,
        ),
        Binding(
            "b",
            "show('bulk')",
            "Bulk jobs",
            tooltip="the bulk jobs and their progress",
            group=SCREEN_KEYS,
        ),
        # `s` opens the schedules; on the tokens and token screens `s` starts a token, and
        # `S` opens the schedules there too. Not in the footer, which keeps its width.
        Binding("s", "show('schedules')", "Schedules", show=False, tooltip="the schedules"),
        Binding("S", "show('schedules')", "Schedules", show=False, tooltip="the schedules"),
        Binding(
            "v",
            "versions",
            "Versions",
            tooltip="the workflow's versions and their live tokens",
            group=SCREEN_KEYS,
        ),
        Binding("question_mark", "help", "Help", key_display="?", tooltip="this help"),
        Binding("q", "quit", "Quit", tooltip="quit"),
    ]

    health: var[dict[str, Any] | None] = var(None, always_update=True)
    """The last answer of `GET /health`."""
    graph: var[dict[str, Any] | None] = var(None)
    """The graph document of `GET /workflow`, fetched again when the checksum changes."""
    stats: var[dict[str, Any] | None] = var(None, always_update=True)
    """The last answer of `GET /stats`."""
    inbox: var[list[dict[str, Any]] | None] = var(None, always_update=True)
    """The last answer of `GET /inbox`, a `Page` of at most `INBOX_LIMIT` whose
    `next` says that more wait; None when the plane has none."""
    job: var[dict[str, Any] | None] = var(None, always_update=True)
    """The bulk job started from this console, as last polled."""
    unreachable: var[str | None] = var(None)
    """Why the control plane cannot be reached now; None while it answers."""
    older: var[dict[str, str]] = var(dict, always_update=True)
    """The states only older versions with live tokens have, with their version's 8 hex digits
    (the states panel shows them after the current version's)."""
    read_only: var[bool] = var(False)
    """The console's token may only read (`GET /health` answers `"access": "read"`):
    the keys that act show `read only` and do nothing."""

    def __init__(
        self,
        plane: ControlPlane,
        *,
        supervisors: Iterable[str] = (),
        refresh: float = 1.0,
        settings: Settings | None = None,
        settings_file: Path | None = None,
        clock: Clock | None = None,
        notices: Iterable[str] = (),
        frozen: bool = False,
        log_file: Path | None = None,
    ) -> None:
        super().__init__()
        self._log_file = LogFile(log_file)
        self.plane = plane
        self.supervisors = tuple(supervisors)
        self.refresh_seconds = refresh
        self.settings = settings or Settings()
        self.settings_file = settings_file
        self._clock = clock or _utc_now
        self._notices = tuple(notices)
        self.frozen = frozen
        self._token_screen: TokenScreen | None = None
        self._graphs: dict[str, dict[str, Any]] = {}
        """The graph documents of older versions by checksum (a version never changes)."""
        self._job_id: int | None = None
        """Tests freeze the clock and the cursor blink so that snapshots are stable."""

    # ------------------------------------------------------------------ life

    def on_load(self) -> None:
        """Open the log before anything can go wrong."""
        problem = self._log_file.open()
        if problem:
            self._notices = (*self._notices, problem)

    def on_mount(self) -> None:
        """Apply the saved theme, show start-up notices, and poll the control plane."""
        if value("debug_point") == CRASH_POINT:
            raise CrashPoint(f"the crash point {CRASH_POINT} is armed (STATEOUS_DEBUG_POINT)")
        if self.settings.theme and self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        self.push_screen("tokens")
        for notice in self._notices:
            self.notify(notice, severity="warning", timeout=8)
        self.poll_plane()
        self.set_interval(self.refresh_seconds, self.poll_plane)

    async def on_unmount(self) -> None:
        """Keep the folders and the theme for next time; close the connections."""
        if self.settings_file is not None:
            # Folders given this time replace the last ones; none given keeps them.
            folders = self.supervisors or self.settings.supervisors
            settings = Settings(supervisors=folders, theme=self.theme)
            problem = save_settings(self.settings_file, settings)
            if problem:
                self.log.warning(problem)
        # Textual cancels the workers only after this handler: a poll still in flight would
        # send on the closed client. Cancel them first, and let each see its cancellation.
        workers = list(self.workers)
        self.workers.cancel_all()
        await asyncio.gather(*(worker.wait() for worker in workers), return_exceptions=True)
        await self.plane.close()
        self._log_file.close()

    # ------------------------------------------------------------------ errors

    def unexpected(self, error: BaseException) -> None:
        """An error nobody expected, caught where it was raised: log it, show it, go on."""
        log_error(error, "unexpected error; the console goes on")
        where = f"; details in {self._log_file.path}" if self._log_file.path else ""
        self.notify(
            f"{error_line(error)} (the console goes on{where})",
            title=TITLE,
            severity="error",
            timeout=15,
            markup=False,
        )

    async def _dispatch_action(self, namespace: DOMNode, action_name: str, params: Any) -> bool:
        """Run a key's action; an error in it is shown and logged, and the console goes on.

        Every key's action runs here (the app's, a screen's, a widget's), so no key ends the
        console. (An override of Textual's private method, pinned by Textual's exact version.)
        """
        try:
            return await super()._dispatch_action(namespace, action_name, params)
        except Exception as error:  # anything at all: shown, logged, survived
            self.unexpected(error)
            return True

    def _handle_exception(self, error: Exception) -> None:
        """An error that reached Textual: a failed worker's is shown and logged, and the console
        goes on (the worker is over; nothing else stopped). Any other stopped a message loop:
        the console ends, logged, with the exit code 1 (`return_code`)."""
        if isinstance(error, WorkerFailed) and not self._exit:
            self.unexpected(error.error)
            return
        log_error(error, "the console ended on an error")
        super()._handle_exception(error)

    def now(self) -> datetime:
        """The console's clock (frozen in tests)."""
        return self._clock()

    # ------------------------------------------------------------------ polls

    @work(exclusive=True, group="plane")
    async def poll_plane(self) -> None:
        """Health (and the graph when its checksum changed) and stats, for every screen."""
        health = await self.call(self.plane.health())
        if health is None:
            return
        if self.graph is None or (self.health or {}).get("checksum") != health.get("checksum"):
            graph = await self.call(self.plane.workflow())
            if graph is not None:
                self.graph = graph
        self.health = health
        self.read_only = health.get("access") == "read"
        stats = await self.call(self.plane.stats(), quiet=True)
        if stats is not None:
            await self._older_graphs(versions_of(stats))
            self.stats = stats
        # A control plane without an inbox refuses it (404): no inbox is shown then.
        # One page of INBOX_LIMIT, its `next` saying that more wait (`inbox 100+`). Not the
        # `waiting` of /stats instead: those count every waiting task, while the inbox holds
        # those of active and paused tokens only (control/api/inbox.py), Postgres
        # folds them in the background, and the `i` screen lists these entries.
        self.inbox = await self.call(self.plane.inbox(limit=INBOX_LIMIT), quiet=True)
        if self._job_id is not None:
            job = await self.call(self.plane.bulk_job(self._job_id), quiet=True)
            if job is not None:
                self.job = job
                if job.get("status") != "running":
                    self._job_id = None  # the bar keeps how it ended

    async def _older_graphs(self, versions: list[Mapping[str, Any]]) -> None:
        """Fetch the graphs of the older versions with live tokens not fetched yet, and name the
        states only they have."""
        for row in versions:
            checksum = row.get("checksum")
            live = row.get("live")
            if row.get("current") is True or not isinstance(live, int) or live == 0:
                continue
            if isinstance(checksum, str) and checksum not in self._graphs:
                graph = await self.call(self.plane.workflow(checksum), quiet=True)
                if graph is not None:
                    self._graphs[checksum] = graph
        older = older_states(self.graph, self._graphs, versions)
        if older != self.older:
            self.older = older

    async def graph_for(self, token: Mapping[str, Any]) -> dict[str, Any] | None:
        """The graph document of the version `token` runs on (its events, states and schemas):
        the current graph for a token of the current version's structure (or a token without
        one, from an older control plane), else `GET /workflow?checksum=` of the newest version
        of its structure. None when it cannot be had (the reason is notified)."""
        structure = token.get("structure")
        versions = await self.call(self.plane.versions()) if isinstance(structure, str) else []
        if versions is None:
            return None
        rows = [row for row in versions if isinstance(row, dict)]
        current = current_version(rows)
        if (
            not isinstance(structure, str)
            or current is None
            or current.get("structure") == structure
        ):
            if self.graph is None:
                self.notify("the workflow is not loaded yet; try again", severity="warning")
            return self.graph
        checksum = checksum_of(structure, rows)
        if checksum is None:
            self.notify(
                f"token '{token.get('token')}' runs on a version the control plane has no record "
                "of", severity="warning",
            )  # fmt: skip
            return None
        if checksum not in self._graphs:
            graph = await self.call(self.plane.workflow(checksum))
            if graph is None:
                return None
            self._graphs[checksum] = graph
        return self._graphs[checksum]

    def follow_job(self, job: int) -> None:
        """Show a bulk job's progress in the status bar until it ends."""
        self._job_id = job
        self.poll_plane()

    async def call(self, request: Awaitable[T], *, quiet: bool = False) -> T | None:
        """Await one request: None when it failed; an unreachable plane shows the banner.

        A refusal is shown as a notification unless `quiet`; the caller then keeps what it shows.
        """
        try:
            answer = await request
        except Refused as exc:
            self.unreachable = None
            if not quiet:
                self.refused(exc)
            return None
        except ClientError as exc:  # no answer, or not the control plane's
            self.unreachable = trouble(exc)
            return None
        self.unreachable = None
        return answer

    def refused(self, refusal: Refused) -> None:
        """Show a refusal of the control plane: its code and its sentence."""
        self.notify(refusal_line(refusal), title="refused", severity="error", timeout=8)

    # ------------------------------------------------------------------ actions

    def action_show(self, name: str) -> None:
        """Go to the main screen `name` (tokens, leases, outboxes), closing what is above."""
        # The stack is [default, main screen, token screens and modals ...].
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if self.screen is not self.get_screen(name):
            self.switch_screen(name)

    def open_token(self, token: str) -> None:
        """Show the token screen of `token`.

        One token screen is kept and pointed at each token opened from a list, so that opening
        one costs no mounting of widgets; a screen already on the stack gets a new one on top.
        """
        cached = self._token_screen
        if cached is None:
            cached = self._token_screen = TokenScreen(token)
            self.install_screen(cached, name="token")
        elif cached in self.screen_stack:
            self.push_screen(TokenScreen(token))
            return
        else:
            cached.retarget(token)
        self.push_screen(cached)

    def action_versions(self) -> None:
        """Open the versions of the workflow over the current screen."""
        if not isinstance(self.screen, VersionsScreen):
            self.push_screen(VersionsScreen())

    def action_help(self) -> None:
        """Open the keys of the current screen."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette: Textual's own commands, the screens, and the current screen's actions."""
        yield from super().get_system_commands(screen)
        yield SystemCommand(
            "Tokens", "Show the tokens screen (t)", lambda: self.action_show("tokens")
        )
        yield SystemCommand(
            "Leases", "Show the leases screen (l)", lambda: self.action_show("leases")
        )
        yield SystemCommand(
            "Supervisors and outboxes",
            "Show the outboxes (o)",
            lambda: self.action_show("outboxes"),
        )
        yield SystemCommand(
            "Inbox", "The tokens waiting for a person (i)", lambda: self.action_show("inbox")
        )
        yield SystemCommand(
            "Versions", "The workflow's versions and their live tokens (v)", self.action_versions
        )
        yield SystemCommand(
            "Schedules", "The schedules, their next run and last token (s, S)",
            lambda: self.action_show("schedules"),
        )  # fmt: skip
        yield SystemCommand("Help", "The keys of this screen (?)", self.action_help)
        commands = getattr(screen, "palette_commands", None)
        if callable(commands):
            # A read-only console offers no command that acts.
            yield from (c for c in commands() if not (self.read_only and _acts(c.callback)))

    def watch_read_only(self, _read_only: bool) -> None:
        """Draw the footer's keys again: the keys that act, or `read only`."""
        self.screen.refresh_bindings()

    def watch_theme(self, theme: str) -> None:
        """Remember the theme for the next start."""
        self.settings = Settings(self.settings.supervisors, theme)


if TYPE_CHECKING:  # the app keeps to the protocol its screens and widgets are typed against
    _CONSOLE: type[Console] = ConsoleApp


def make_console(
    url: str,
    *,
    supervisors: Iterable[str] = (),
    refresh: float = 1.0,
    settings: Settings | None = None,
    settings_file: Path | None = None,
    notices: Iterable[str] = (),
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Clock | None = None,
    frozen: bool = False,
    log_file: Path | None = None,
) -> ConsoleApp:
    """The console for the control plane at `url`.

    `transport` and `clock` let tests feed recorded answers and a fixed time; `frozen` also stops
    the cursor blink. The command passes the settings file so that the console remembers them,
    and the log file that its unexpected errors are written to.
    """
    plane = ControlPlane(url, transport=transport)
    return ConsoleApp(
        plane,
        supervisors=supervisors,
        refresh=refresh,
        settings=settings,
        settings_file=settings_file,
        clock=clock,
        notices=notices,
        frozen=frozen,
        log_file=log_file,
    )
