"""The steering keys shared by the tokens screen and the token screen: p, r, c, f, s."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.binding import Binding

from stateous.model.history import token_line
from stateous.tui.console import Console
from stateous.tui.screens.confirm import ConfirmScreen
from stateous.tui.screens.fire import FireScreen
from stateous.tui.screens.read_only import ReadOnlyScreen, with_read_only
from stateous.tui.screens.start import StartScreen

# Each with its `read only` twin (for a console whose token may only read).
STEERING_BINDINGS = with_read_only(
    [
        Binding("p", "steer('pause')", "Pause"),
        Binding("r", "steer('resume')", "Resume"),
        Binding("c", "cancel", "Cancel"),
        Binding("f", "fire", "Fire"),
        Binding("s", "start", "Start"),
    ]
)


class SteeringScreen(ReadOnlyScreen):
    """A screen with a selected token that the steering keys act on.

    A subclass says which token is selected and how to show a token the control plane sent back.
    """

    @property
    def console(self) -> Console:
        """The console app."""
        return self.app  # type: ignore[return-value]  # the console is the only app

    def selected_token(self) -> dict[str, Any] | None:
        """The token the keys act on, as last fetched; None when there is none."""
        raise NotImplementedError

    def show_token(self, token: dict[str, Any]) -> None:
        """Show a token the control plane answered with (the row or the line, at once)."""
        raise NotImplementedError

    def refresh_now(self) -> None:
        """Poll again now (after a form closed)."""
        raise NotImplementedError

    def _steerable(self) -> dict[str, Any] | None:
        token = self.selected_token()
        if token is None:
            self.notify("no token is selected", severity="warning")
            return None
        parent = token.get("parent")
        if isinstance(parent, str):
            self.notify(
                f"token '{token.get('token')}' is a child of '{parent}': steer its parent",
                severity="warning",
            )
            return None
        return token

    def action_steer(self, action: str) -> None:
        """Pause or resume the selected token."""
        token = self._steerable()
        if token is not None:
            self.steer(str(token["token"]), action)

    @work(exclusive=True, group="steer")
    async def steer(self, token: str, action: str) -> None:
        """One request; the answer is shown at once, a refusal as a notification."""
        answer = await self.console.call(self.console.plane.steer(token, action))
        if answer is not None:
            self.show_token(answer)
            self.notify(str(token_line(answer)), title=action)
        else:
            self.refresh_now()

    def action_cancel(self) -> None:
        """Cancel the selected token, after a confirmation naming it and its children."""
        token = self._steerable()
        if token is not None:
            self.confirm_cancel(str(token["token"]))

    @work(exclusive=True, group="steer")
    async def confirm_cancel(self, token: str) -> None:
        """Fetch the children, ask, then cancel."""
        plane = self.console.plane
        children = await self.console.call(plane.tokens(parent=token, limit=1000))
        if children is None:
            return
        question = f"Cancel token '{token}' for good?"
        live = [c for c in children if c.get("status") in ("active", "paused")]
        if children:
            names = ", ".join(str(c.get("token")) for c in children[:5])
            more = f" and {len(children) - 5} more" if len(children) > 5 else ""
            question += (
                f"\nIts {len(children)} child token(s) ({len(live)} live) end with it: "
                f"{names}{more}."
            )
        confirm = ConfirmScreen(question, yes="Cancel it", reason=True)
        if not await self.app.push_screen_wait(confirm):
            return
        answer = await self.console.call(plane.steer(token, "cancel", confirm.reason_text or None))
        if answer is not None:
            self.show_token(answer)
            self.notify(str(token_line(answer)), title="cancel")
        else:
            self.refresh_now()

    def action_fire(self) -> None:
        """Open the fire form for the selected token."""
        token = self._steerable()
        if token is not None:
            self.open_fire_form(token)

    @work(exclusive=True, group="steer")
    async def open_fire_form(self, token: dict[str, Any]) -> None:
        """The fire form of `token`, with the events of the version it runs on."""
        graph = await self.console.graph_for(token)
        if graph is not None:
            self.app.push_screen(FireScreen(token, graph), self._form_closed)

    def action_start(self) -> None:
        """Open the start form."""
        if self.console.graph is None:
            self.notify("the workflow is not loaded yet; try again", severity="warning")
            return
        self.app.push_screen(StartScreen(self.console.graph), self._form_closed)

    def _form_closed(self, sent: bool | None) -> None:
        # After a refusal or a success alike, show the tokens as they are now.
        self.refresh_now()
