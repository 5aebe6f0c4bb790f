"""The console with a `read` token (spec 97 §3): every screen shows, and the keys that act show
`read only` in the footer and do nothing.

The console learns what its token may do from `GET /health`'s `access` (the app's `read_only`).
Each key that acts is declared with a twin (`with_read_only`): the same key, grouped under `read
only`, whose action does nothing. `ReadOnlyScreen.check_action` keeps one of the two: the key
itself while the console may act, else the twin, so that the footer reads `p r c f s R m M read
only` and a press does nothing. The twin takes the press rather than being disabled: a disabled
key would fall through to the app's own binding of that letter (`s`, the schedules).
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.screen import Screen

__all__ = ["ACTS", "READ_ONLY", "ReadOnlyScreen", "acts", "read_only", "with_read_only"]

#: The actions that change something on the control plane: a `read` token may run none of them.
ACTS = frozenset({"steer", "cancel", "fire", "start", "retry", "move", "migrate", "answer"})

#: The footer's label of the keys that act, on a read-only console.
READ_ONLY = Binding.Group("read only")

#: The action of a twin (`ReadOnlyScreen.action_read_only`): nothing.
TWIN = "read_only"


def acts(action: str) -> bool:
    """Whether `action` (a binding's action, with or without its parameters) changes something."""
    return action.partition("(")[0] in ACTS


def with_read_only(bindings: list[Binding]) -> list[Binding]:
    """`bindings` with a twin after each one that acts: its key, `read only`, no action."""
    out: list[Binding] = []
    for binding in bindings:
        out.append(binding)
        if acts(binding.action):
            twin = Binding(
                binding.key,
                f"{TWIN}('{binding.key}')",  # one action a key: the footer shows each key
                "read only",
                show=binding.show,
                key_display=binding.key_display,
                group=READ_ONLY,
                tooltip=f"{binding.description}: this console's token may only read",
            )
            out.append(twin)
    return out


def read_only(node: Any) -> bool:
    """Whether the console of `node` (a screen or the app) may only read."""
    return bool(getattr(node.app, "read_only", False))


class ReadOnlyScreen(Screen[None]):
    """A screen with keys that act: on a read-only console they are shown as `read only` and do
    nothing; otherwise they are the keys themselves."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide the twins, or the keys that act when the console may only read."""
        if action == TWIN:
            return read_only(self)
        return action not in ACTS or not read_only(self)

    def action_read_only(self, key: str) -> None:
        """A key that acts, pressed on a read-only console: nothing (spec 97 §3)."""
