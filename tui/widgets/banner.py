"""The banner shown while the control plane cannot be reached."""

from __future__ import annotations

from textual.widgets import Static

from stateous.tui.console import Console


class Banner(Static):
    """`cannot reach URL: <reason>; retrying`, visible only while the control plane is away."""

    DEFAULT_CSS = """
    Banner {
        display: none;
        height: auto;
        background: $error;
        color: $text;
        text-style: bold;
        padding: 0 1;
    }
    Banner.-shown {
        display: block;
    }
    """

    def on_mount(self) -> None:
        """Follow the app's connection state."""
        self.watch(self.app, "unreachable", self._show)

    def _show(self, reason: str | None) -> None:
        app: Console = self.app  # type: ignore[assignment]  # the console is the only app
        self.set_class(reason is not None, "-shown")
        if reason is not None:
            self.update(f"cannot reach {app.plane.url}: {reason}; retrying")
