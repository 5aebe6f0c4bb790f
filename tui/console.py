"""`Console`: what the screens and widgets need of the console app, as a protocol of their own.

The screens and widgets are typed against this rather than against `ConsoleApp`, so that the app
can import its screens without the screens importing the app (no import circle). `tui.app`
checks that `ConsoleApp` keeps to it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from datetime import datetime
from typing import Any, Protocol

from textual.notifications import SeverityLevel

from stateous.tui.api import ControlPlane
from stateous.tui.settings import Settings


class Console(Protocol):
    """The console app as its screens see it: the plane, what it polled, and its clock."""

    plane: ControlPlane
    supervisors: tuple[str, ...]
    settings: Settings
    refresh_seconds: float
    frozen: bool

    @property
    def health(self) -> dict[str, Any] | None:
        """The last answer of `GET /health`."""

    @property
    def graph(self) -> dict[str, Any] | None:
        """The graph document of `GET /workflow`."""

    @property
    def stats(self) -> dict[str, Any] | None:
        """The last answer of `GET /stats`."""

    @property
    def older(self) -> dict[str, str]:
        """The states only older versions with live tokens have, with their version."""

    @property
    def inbox(self) -> list[dict[str, Any]] | None:
        """The last answer of `GET /inbox`; None when the control plane has no inbox."""

    @property
    def job(self) -> dict[str, Any] | None:
        """The bulk job the console follows, as last polled; None: none."""

    def follow_job(self, job: int) -> None:
        """Follow a bulk job in the status bar until it ends."""

    @property
    def read_only(self) -> bool:
        """The console's token may only read."""

    @property
    def unreachable(self) -> str | None:
        """Why the control plane cannot be reached now; None while it answers."""

    def now(self) -> datetime:
        """The console's clock (frozen in tests)."""

    async def call[T](self, request: Awaitable[T], *, quiet: bool = False) -> T | None:
        """Await one request: None when it failed (a refusal is notified unless `quiet`)."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Show a notification."""

    async def graph_for(self, token: Mapping[str, Any]) -> dict[str, Any] | None:
        """The graph document of the version `token` runs on; None when it cannot be had."""

    def open_token(self, token: str) -> None:
        """Show the token screen of `token`."""
