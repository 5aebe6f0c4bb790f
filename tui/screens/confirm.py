"""Yes-or-no questions: the keys every confirmation answers to, its optional reason field, and
`ConfirmScreen`, asked before a single token's cancel or retry.

Every confirmation of the console answers the same keys: `y` acts, `n` or `escape` does not,
`enter` in the reason field acts. It opens with No focused, so that a stray `enter` acts on
nothing, `y` acts at once, and `tab` goes to the reason field.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from stateous.tui.unexpected import GuardedModal

REASON_ID = "reason"
"""The id of every confirmation's reason field."""

ANSWER_BINDINGS: list[BindingType] = [
    Binding("y", "answer(True)", "Yes"),
    Binding("n,escape", "answer(False)", "No"),
]
"""The keys of every confirmation (an Input keeps the letters typed into it)."""


def reason_field(kept: str = "in the history", enter: str = "yes") -> Input:
    """The operator's optional reason, sent as the act's `by.reason`; `enter` in it does
    `enter` (answers yes, or sends a form)."""
    return Input(placeholder=f"reason (optional, kept {kept}; enter: {enter})", id=REASON_ID)


def keys_hint(yes: str, *, reason: bool) -> Label:
    """The line under a question saying which keys answer it."""
    text = f"y: {yes.lower()} · n or esc: no" + (" · tab: a reason, then enter" if reason else "")
    return Label(text, classes="hint-line", id="keys")


def typed_reason(screen: ModalScreen[Any]) -> str:
    """The reason typed in `screen`'s reason field, stripped ('' when it has none)."""
    found = screen.query(f"#{REASON_ID}")
    return found.first(Input).value.strip() if found else ""


class ConfirmScreen(GuardedModal[bool]):
    """Ask `question`; dismissed with True only on `y`, the yes button or `enter` in the reason."""

    BINDINGS: ClassVar[list[BindingType]] = ANSWER_BINDINGS

    def __init__(self, question: str, yes: str = "Yes", *, reason: bool = False) -> None:
        super().__init__()
        self.question = question
        self.yes = yes
        self.asks_reason = reason
        self.reason_text = ""
        """With `reason`: the text of the reason field when yes was chosen."""

    def compose(self) -> ComposeResult:
        """The question, the keys, the reason field (when asked) and two buttons."""
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="question", id="question")
            yield keys_hint(self.yes, reason=self.asks_reason)
            if self.asks_reason:
                yield reason_field()
            with Horizontal(classes="buttons"):
                yield Button(f"{self.yes} (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        """No is the safe default; `tab` goes on to the reason field."""
        self.query_one("#no", Button).focus()

    @on(Button.Pressed, "#yes")
    @on(Input.Submitted, f"#{REASON_ID}")
    def _yes(self) -> None:
        self.action_answer(True)

    @on(Button.Pressed, "#no")
    def _no(self) -> None:
        self.dismiss(False)

    def action_answer(self, answer: bool) -> None:
        """Close with `answer` (keeping the reason typed, if any)."""
        if answer:
            self.reason_text = typed_reason(self)
        self.dismiss(answer)
