"""`s`: start a token, with its context checked against the context model before sending."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static, TextArea

from stateous.model.history import token_line
from stateous.tui.console import Console
from stateous.tui.schema import (
    FormError,
    context_model,
    field_lines,
    parse_object,
    skeleton,
    validate,
)
from stateous.tui.unexpected import GuardedModal

TOKEN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class StartScreen(GuardedModal[bool]):
    """A form: the new token's id and its context. Dismissed with True once it is started."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("ctrl+s", "send", "Start"),
    ]

    def __init__(self, graph: dict[str, Any]) -> None:
        super().__init__()
        self.graph = graph
        self.model = context_model(graph)

    @property
    def console(self) -> Console:
        """The console app."""
        return self.app  # type: ignore[return-value]  # the console is the only app

    def compose(self) -> ComposeResult:
        """Id, fields, context, buttons."""
        with Vertical(classes="dialog"):
            yield Label(f"start a token of {self.graph.get('workflow', '?')}", classes="question")
            yield Input(placeholder="token id, e.g. ORDER-7", id="token", max_length=128)
            fields = (
                f"context {self.model}: " + "; ".join(field_lines(self.graph, self.model))
                if self.model
                else "this workflow has no context model"
            )
            yield Static(fields, classes="fields")
            yield TextArea(skeleton(self.graph, self.model), id="context", soft_wrap=True)
            yield Static("", classes="error", id="error")
            with Horizontal(classes="buttons"):
                yield Button("Start (ctrl+s)", variant="primary", id="send")
                yield Button("Close (esc)", id="close")

    def on_mount(self) -> None:
        """Focus the id; no blinking cursor in frozen tests."""
        if self.console.frozen:
            self.query_one(TextArea).cursor_blink = False
            self.query_one(Input).cursor_blink = False
        self.query_one(Input).focus()

    def form(self) -> tuple[str, dict[str, Any]]:
        """(id, context); FormError when the form cannot be sent."""
        token = self.query_one(Input).value
        if not TOKEN_ID.fullmatch(token):
            raise FormError(
                "a token id is a letter or digit, then up to 127 letters, digits, '.', '_' or '-'"
            )
        context = parse_object(self.query_one(TextArea).text, "context")
        # The control plane adds the defaults; the check here only needs the required fields.
        validate(self.graph, self.model, context, "context")
        return token, context

    @on(Button.Pressed, "#send")
    @on(Input.Submitted, "#token")
    def action_send(self) -> None:
        """Check the form, then send it."""
        try:
            token, context = self.form()
        except FormError as exc:
            self.query_one("#error", Static).update(str(exc))
            return
        self.query_one("#error", Static).update("")
        self.send(token, context)

    @work(exclusive=True, group="start")
    async def send(self, token: str, context: dict[str, Any]) -> None:
        """One `POST /tokens`; a refusal leaves the form open."""
        answer = await self.console.call(self.console.plane.start_new(token, context))
        if answer is None:
            return
        created, body = answer
        if created:
            self.console.notify(str(token_line(body)), title="started")
        else:
            self.console.notify(
                f"{token_line(body)} (it existed; nothing started)", severity="warning"
            )
        self.dismiss(True)

    @on(Button.Pressed, "#close")
    def action_close(self) -> None:
        """Close without starting."""
        self.dismiss(False)
