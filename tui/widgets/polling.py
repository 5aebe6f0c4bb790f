"""`PollingScreen`: a screen that polls at the console's interval, only while it is shown."""

from __future__ import annotations

from textual import work
from textual.css.query import NoMatches
from textual.timer import Timer

from stateous.tui.console import Console
from stateous.tui.unexpected import GuardedScreen


class PollingScreen(GuardedScreen[None]):
    """Polls now and at the console's interval; the timer pauses while another screen is shown.

    A subclass calls `start_polling` once mounted and reads and shows its data in `fetch`; one
    that must read in a thread overrides `poll` instead.
    """

    _timer: Timer | None = None
    _suspended = False

    @property
    def console(self) -> Console:
        """The console app."""
        return self.app  # type: ignore[return-value]  # the console is the only app

    def start_polling(self) -> None:
        """Poll now, then at the console's `refresh_seconds`."""
        self._timer = self.set_interval(self.console.refresh_seconds, self.refresh_now)
        self.refresh_now()

    def on_screen_suspend(self) -> None:
        """Poll only what is shown."""
        if self._timer is not None:
            self._timer.pause()
            self._suspended = True

    def on_screen_resume(self) -> None:
        """Back on screen: poll at once, then at the interval. The first showing, just after
        `start_polling`, asks nothing more: one poll, not two of which the second cancels the
        first (a refresh must stay a few requests)."""
        if self._timer is not None and self._suspended:
            self._suspended = False
            self._timer.resume()
            self.refresh_now()

    def refresh_now(self) -> None:
        """Poll now."""
        self.poll()

    @work(exclusive=True, group="poll")
    async def poll(self) -> None:
        """One `fetch` in a worker; a new poll cancels the one still in flight."""
        try:
            await self.fetch()
        except NoMatches:
            return  # the screen closed while a request was in flight

    async def fetch(self) -> None:
        """Read this screen's data and show it."""
        raise NotImplementedError
