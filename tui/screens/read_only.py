"""The console with a `read` token: every screen shows, and the keys that act show `read only`
in the footer and, pressed, send nothing and say which role they need.

The console learns what its token may do from `GET /health`'s `access` (the app's `read_only`).
Each key that acts is declared with a twin (`with_read_only`): the same key, grouped under `read
only`, whose action sends nothing and names the role the key needs. `ReadOnlyScreen.check_action` keeps one of the two: the key
itself while the console may act, else the twin, so that the footer reads `p r c f s R m M read
only` and a press only says so. The twin takes the press rather than being disabled: a disabled
key would fall through to the app's own binding of that letter (`s`, the schedules).
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding

from stateous.tui.unexpected import GuardedScreen

__all__ = [
    "ACTS",
    "READ_ONLY",
    "ReadOnlyScreen",
    "acts",
    "read_only",
    "refusal",
    "say_read_only",
    "with_read_only",
]

#: The actions that change something on the control plane: a `read` token may run none of them.
ACTS = frozenset({"steer", "cancel", "fire", "start", "retry", "move", "migrate", "answer"})

#: The footer's label of the keys that act, on a read-only console.
READ_ONLY = Binding.Group("read only")

#: The action of a twin (`ReadOnlyScreen.action_read_only`): it says why nothing happens.
TWIN = "read_only"

#: The roles whose token may act from the console (any change an operator makes).
ACTING_ROLES = "operate or admin"


def refusal(what: str) -> str:
    """`Pause needs the operate or admin role: this console's token has read`."""
    return f"{what} needs the {ACTING_ROLES} role: this console's token has read"


def say_read_only(node: Any, what: str) -> None:
    """Tell the operator that a key that acts does nothing here, and which role it needs."""
    node.app.notify(refusal(what), title="read only", severity="warning", timeout=6)


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
                # One action a key (the footer shows each key), with what the key does.
                f"{TWIN}({binding.key!r}, {binding.description!r})",
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


class ReadOnlyScreen(GuardedScreen[None]):
    """A screen with keys that act: on a read-only console they are shown as `read only` and do
    nothing; otherwise they are the keys themselves."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide the twins, or the keys that act when the console may only read."""
        if action == TWIN:
            return read_only(self)
        return action not in ACTS or not read_only(self)

    def action_read_only(self, key: str, what: str = "") -> None:
        """A key that acts, pressed on a read-only console: nothing is sent; a notification
        says which role the key needs."""
        say_read_only(self, what or key)
