"""`f`: fire an event at a token, with a payload checked against its schema before sending."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Select, Static, TextArea

from stateous.model.history import duplicate_line, token_line
from stateous.tui.api import fired
from stateous.tui.console import Console
from stateous.tui.schema import (
    FormError,
    field_lines,
    outside_events,
    parse_object,
    payload_model,
    skeleton,
    validate,
)
from stateous.tui.screens.confirm import REASON_ID, reason_field, typed_reason
from stateous.tui.unexpected import GuardedModal


class FireScreen(GuardedModal[bool]):
    """A form: the event, its payload as JSON, an optional idempotency key (`k`) and an optional
    reason (`enter` in it sends, as `ctrl+s` does).

    Dismissed with True once the control plane took the event (also a duplicate).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("ctrl+s", "send", "Send"),
        Binding("k", "key", "Idempotency key", show=False),
    ]

    def __init__(self, token: dict[str, Any], graph: dict[str, Any]) -> None:
        super().__init__()
        self.token = token
        self.graph = graph
        self.events = outside_events(graph, token)

    @property
    def console(self) -> Console:
        """The console app."""
        return self.app  # type: ignore[return-value]  # the console is the only app

    def compose(self) -> ComposeResult:
        """Event, fields, payload, key, reason, buttons."""
        with Vertical(classes="dialog"):
            yield Label(f"fire an event at {token_line(self.token)}", classes="question")
            if not self.events:
                yield Static(
                    f"'{self.token.get('state')}' takes no event from outside.", classes="error"
                )
            options = [(event, event) for event in self.events]
            yield Select(
                options,
                allow_blank=not options,
                id="event",
                value=self.events[0] if options else Select.NULL,
            )
            yield Static("", classes="fields", id="fields")
            yield TextArea("{}", id="payload", soft_wrap=True)
            yield Input(placeholder="idempotency key (optional, k)", id="key", max_length=256)
            yield reason_field(enter="send")
            yield Static("", classes="error", id="error")
            with Horizontal(classes="buttons"):
                yield Button("Send (ctrl+s)", variant="primary", id="send", disabled=not options)
                yield Button("Close (esc)", id="close")

    def on_mount(self) -> None:
        """Show the first event's fields; no blinking cursor in frozen tests."""
        if self.console.frozen:
            self.query_one(TextArea).cursor_blink = False
            for field in self.query(Input):
                field.cursor_blink = False
        self._show_event(self.events[0] if self.events else None)
        self.query_one(TextArea).focus()

    @on(Select.Changed, "#event")
    def _event_chosen(self, changed: Select.Changed) -> None:
        self._show_event(str(changed.value) if changed.value != Select.NULL else None)

    def _show_event(self, event: str | None) -> None:
        model = payload_model(self.graph, self.token, event) if event else None
        if event is None:
            text = ""
        elif model is None:
            text = f"'{event}' has no payload: send {{}}"
        else:
            text = f"payload {model}: " + "; ".join(field_lines(self.graph, model))
        self.query_one("#fields", Static).update(text)
        self.query_one(TextArea).text = skeleton(self.graph, model)

    def form(self) -> tuple[str, dict[str, Any] | None, str | None]:
        """(event, payload, key) from the form; FormError when it cannot be sent."""
        chosen = self.query_one(Select).value
        if chosen == Select.NULL:
            raise FormError("choose an event")
        event = str(chosen)
        model = payload_model(self.graph, self.token, event)
        payload = parse_object(self.query_one(TextArea).text, "payload")
        validate(self.graph, model, payload, "payload")
        key = self.query_one("#key", Input).value or None
        if key is not None and any(ord(c) < 32 or ord(c) == 127 for c in key):
            raise FormError("an idempotency key has no control characters")
        return event, (payload if model is not None else None), key

    @on(Button.Pressed, "#send")
    @on(Input.Submitted, f"#{REASON_ID}")
    def action_send(self) -> None:
        """Check the form, then send it."""
        try:
            event, payload, key = self.form()
        except FormError as exc:
            self.query_one("#error", Static).update(str(exc))
            return
        self.query_one("#error", Static).update("")
        self.send(event, payload, key, typed_reason(self) or None)

    @work(exclusive=True, group="fire")
    async def send(
        self, event: str, payload: dict[str, Any] | None, key: str | None, reason: str | None
    ) -> None:
        """One `POST /tokens/{id}/events/{event}`; a refusal leaves the form open."""
        plane = self.console.plane
        token_id = str(self.token["token"])
        answer = await self.console.call(
            plane.fire(token_id, event, payload, key=key, reason=reason)
        )
        if answer is None:
            return
        duplicate, token = fired(answer)
        line = duplicate_line(token) if duplicate else token_line(token)
        self.console.notify(str(line), title=f"fired {event}")
        self.dismiss(True)

    def action_key(self) -> None:
        """Go to the idempotency key."""
        self.query_one("#key", Input).focus()

    @on(Button.Pressed, "#close")
    def action_close(self) -> None:
        """Close without sending."""
        self.dismiss(False)
