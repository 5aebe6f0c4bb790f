"""The repair keys (spec 80 §3): `R` retries a failed token after a confirmation, `m` moves a
token to a state chosen from the list of its workflow's states."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from stateous.model.history import display_state, token_line
from stateous.tui.screens.confirm import ConfirmScreen
from stateous.tui.screens.steering import SteeringScreen

REPAIR_BINDINGS = [
    Binding("R", "retry", "Retry"),
    Binding("m", "move", "Move"),
]


class MoveScreen(ModalScreen[str | None]):
    """The states of the token's workflow; `enter` moves the token to the highlighted one."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close")]

    def __init__(self, token: dict[str, Any], states: list[str]) -> None:
        super().__init__()
        self.token = token
        self.states = states

    def compose(self) -> ComposeResult:
        """The question and the list of states, the token's own state marked."""
        current = self.token.get("state")
        options = [
            Option(f"{name}  (now)" if name == current else name, id=name) for name in self.states
        ]
        with Vertical(classes="dialog"):
            yield Label(
                f"move {token_line(self.token)} to which state? (enter: move, esc: close)",
                classes="question",
            )
            yield OptionList(*options, id="states")

    def on_mount(self) -> None:
        """The list has the keys."""
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected, "#states")
    def _chosen(self, chosen: OptionList.OptionSelected) -> None:
        self.dismiss(chosen.option.id)

    def action_close(self) -> None:
        """Close without moving."""
        self.dismiss(None)


class RepairScreen(SteeringScreen):
    """A steering screen with the repair keys."""

    def action_retry(self) -> None:
        """Retry the selected token, after a confirmation."""
        token = self._steerable()
        if token is None:
            return
        if token.get("status") != "failed":
            self.notify(
                f"token '{token.get('token')}' is {token.get('status')}; only a failed token "
                "can be retried",
                severity="warning",
            )
            return
        self.confirm_retry(token)

    @work(exclusive=True, group="steer")
    async def confirm_retry(self, token: dict[str, Any]) -> None:
        """Ask, then retry."""
        ident, state = str(token["token"]), display_state(token.get("state"))
        question = f"Retry token '{ident}'?\nIt enters '{state}' again, as a new visit."
        if not await self.app.push_screen_wait(ConfirmScreen(question, yes="Retry it")):
            return
        self._answered(await self.console.call(self.console.plane.retry(ident)), "retry")

    def action_move(self) -> None:
        """Choose a state of the token's workflow, then move the token there."""
        token = self._steerable()
        if token is None:
            return
        graph = self.console.graph
        if graph is None:
            self.notify("the workflow is not loaded yet; try again", severity="warning")
            return
        states = [str(name) for name in graph.get("states", {})]
        self.choose_move(token, states)

    @work(exclusive=True, group="steer")
    async def choose_move(self, token: dict[str, Any], states: list[str]) -> None:
        """The list of states, then the move."""
        state = await self.app.push_screen_wait(MoveScreen(token, states))
        if state is None:
            return
        answer = await self.console.call(self.console.plane.move(str(token["token"]), state))
        self._answered(answer, "move")

    def _answered(self, answer: dict[str, Any] | None, title: str) -> None:
        if answer is not None:
            self.show_token(answer)
            self.notify(str(token_line(answer)), title=title)
        self.refresh_now()
