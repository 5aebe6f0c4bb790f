"""What the console does with an error nobody expected: it shows it, logs it, and goes on.

Textual ends an app on any exception that reaches it (`App._handle_exception`), and stops the
message loop of the widget whose handler raised. The console catches what it can where it is
raised (an action of a key, a worker), so that the loops keep running; what still reaches
Textual ends the console, logged, with a non-zero exit code.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import platformdirs
from textual.message import Message
from textual.message_pump import MessagePump
from textual.screen import ModalScreen, Screen

LOGGER = logging.getLogger("stateous.tui")
"""The console's log: its unexpected errors with their tracebacks."""

TITLE = "unexpected error"
"""The title of the notification that shows one."""


def log_path() -> Path:
    """`console.log` in the user log folder of the app `stateous` (platformdirs)."""
    return platformdirs.user_log_path("stateous") / "console.log"


def error_line(error: BaseException) -> str:
    """`KeyError: 'state'`: the error's class and its message, on one line."""
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def log_error(error: BaseException, what: str) -> None:
    """Write `what` and the error's traceback to the console's log."""
    lines = "".join(traceback.format_exception(error)).rstrip()
    LOGGER.error("%s: %s\n%s", what, error_line(error), lines)


class LogFile:
    """The console's log file while it runs: a handler of `LOGGER` added at start, removed at
    the end. The log is written only here (never to the terminal the console draws on)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._handler: logging.Handler | None = None

    def open(self) -> str | None:
        """Start logging to the file; a sentence when it cannot be written (then not logged)."""
        if self.path is None:
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(self.path, encoding="utf-8", delay=False)
        except OSError as exc:
            return f"cannot write the log file {self.path}: {exc.strerror or exc}"
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        LOGGER.addHandler(handler)
        LOGGER.setLevel(logging.INFO)
        LOGGER.propagate = False  # never the root logger's stderr, under the console's screen
        self._handler = handler
        return None

    def close(self) -> None:
        """Stop logging to the file."""
        if self._handler is not None:
            LOGGER.removeHandler(self._handler)
            self._handler.close()
            self._handler = None


R = TypeVar("R")


async def guarded(node: MessagePump, handle: Awaitable[None]) -> None:
    """Await a message's handlers; an error in one is shown and logged by the console app (its
    `unexpected`), so that the node's message loop, which Textual would stop, goes on."""
    try:
        await handle
    except Exception as error:  # anything at all: shown, logged, survived
        report = getattr(node.app, "unexpected", None)
        if not callable(report):
            raise
        report(error)


class GuardedScreen(Screen[R]):
    """A screen whose message handlers (its `on_…` and `@on` methods) cannot end the console."""

    async def _on_message(self, message: Message) -> None:
        await guarded(self, super()._on_message(message))


class GuardedModal(ModalScreen[R]):
    """A modal screen whose message handlers cannot end the console."""

    async def _on_message(self, message: Message) -> None:
        await guarded(self, super()._on_message(message))
