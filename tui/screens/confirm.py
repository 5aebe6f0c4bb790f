"""A yes-or-no question, used before a cancel."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label


class ConfirmScreen(ModalScreen[bool]):
    """Ask `question`; dismissed with True only on `y` or the yes button."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str, yes: str = "Yes", *, reason: bool = False) -> None:
        super().__init__()
        self.question = question
        self.yes = yes
        self.asks_reason = reason
        self.reason_text = ""
        """With `reason`: the text of the reason field when yes was chosen (spec 80 §1)."""

    def compose(self) -> ComposeResult:
        """The question and two buttons."""
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="question", id="question")
            if self.asks_reason:
                yield Input(placeholder="reason (optional, kept in the history)", id="reason")
            with Horizontal(classes="buttons"):
                yield Button(f"{self.yes} (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        """No is the safe default."""
        self.query_one("#no", Button).focus()

    @on(Button.Pressed, "#yes")
    def _yes(self) -> None:
        self.action_answer(True)

    @on(Button.Pressed, "#no")
    def _no(self) -> None:
        self.dismiss(False)

    def action_answer(self, answer: bool) -> None:
        """Close with `answer` (keeping the reason typed, if any)."""
        if answer and self.asks_reason:
            self.reason_text = self.query_one("#reason", Input).value.strip()
        self.dismiss(answer)
