"""The repair keys: `R` retries a failed token after a confirmation, `m` moves a
token to a state chosen from the list of its workflow's states, `M` migrates it to the current
version (`migrate.py`); each takes an optional reason."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from stateous.model.history import display_state
from stateous.tui.screens.confirm import REASON_ID, ConfirmScreen, reason_field, typed_reason
from stateous.tui.screens.migrate import MigratingScreen
from stateous.tui.screens.read_only import with_read_only
from stateous.tui.unexpected import GuardedModal

REPAIR_BINDINGS = with_read_only(
    [
        Binding("R", "retry", "Retry"),
        Binding("m", "move", "Move"),
        Binding("M", "migrate", "Migrate", tooltip="migrate to the current version"),
    ]
)


def move_question(token: dict[str, Any]) -> str:
    """`move FAIL-3 (in review, failed) to which state?`."""
    return (
        f"move {token.get('token')} (in {display_state(token.get('state'))}, "
        f"{token.get('status')}) to which state?"
    )


class MoveScreen(GuardedModal[str | None]):
    """The states of the token's workflow; `enter` moves the token to the highlighted one, also
    from the reason field below the list (`tab`)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close")]

    def __init__(self, token: dict[str, Any], states: list[str]) -> None:
        super().__init__()
        self.token = token
        self.states = states
        self.reason_text = ""
        """The text of the reason field when a state was chosen."""

    def compose(self) -> ComposeResult:
        """The question, the keys, the list of states (the token's own marked), the reason."""
        current = self.token.get("state")
        options = [
            Option(f"{name}  (now)" if name == current else name, id=name) for name in self.states
        ]
        with Vertical(classes="dialog"):
            yield Label(move_question(self.token), classes="question", id="question")
            yield Label(
                "enter: move it there · tab: a reason, then enter · esc: close",
                classes="hint-line",
                id="keys",
            )
            yield OptionList(*options, id="states")
            yield reason_field(enter="move")

    def on_mount(self) -> None:
        """The list has the keys."""
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected, "#states")
    def _chosen(self, chosen: OptionList.OptionSelected) -> None:
        self._move_to(chosen.option.id)

    @on(Input.Submitted, f"#{REASON_ID}")
    def _reason_entered(self) -> None:
        states = self.query_one(OptionList)
        index = states.highlighted
        if index is not None:
            self._move_to(states.get_option_at_index(index).id)

    def _move_to(self, state: str | None) -> None:
        self.reason_text = typed_reason(self)
        self.dismiss(state)

    def action_close(self) -> None:
        """Close without moving."""
        self.dismiss(None)


class RepairScreen(MigratingScreen):
    """A steering screen with the repair keys (`M` from `MigratingScreen`)."""

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
        confirm = ConfirmScreen(question, yes="Retry it", reason=True)
        if not await self.app.push_screen_wait(confirm):
            return
        retry = self.console.plane.retry(ident, reason=confirm.reason_text or None)
        self._answered(await self.console.call(retry), "retry")

    def action_move(self) -> None:
        """Choose a state of the token's workflow, then move the token there."""
        token = self._steerable()
        if token is not None:
            self.choose_move(token)

    @work(exclusive=True, group="steer")
    async def choose_move(self, token: dict[str, Any]) -> None:
        """The list of the states of the token's version (and a reason), then the move."""
        graph = await self.console.graph_for(token)
        if graph is None:
            return
        choose = MoveScreen(token, [str(name) for name in graph.get("states", {})])
        state = await self.app.push_screen_wait(choose)
        if state is None:
            return
        move = self.console.plane.move(
            str(token["token"]), state, reason=choose.reason_text or None
        )
        answer = await self.console.call(move)
        self._answered(answer, "move")
