"""The statuses each bulk action can act on, which the CLI and the console select
when the user names no status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ACTS_ON: dict[str, tuple[str, ...]] = {
    "pause": ("active",),
    "resume": ("paused",),
    "cancel": ("active", "paused"),
    "fire": ("active", "paused"),
    "retry": ("failed",),
    "migrate": ("active", "paused", "failed"),
}
"""A token of another status would only be skipped (`pause --where --state review` once matched
9,801 completed tokens, each one skipped). The HTTP API keeps its empty filter: every top token."""


def acting_filter(action: str, given: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """`given` with the statuses `action` acts on when it names none; an explicit status wins.

    Returns the filter to send and whether the statuses were added (the default was taken).
    An action not in `ACTS_ON` leaves the filter as it is (the control plane refuses it)."""
    if given.get("status") or action not in ACTS_ON:
        return dict(given), False
    rest = {part: value for part, value in given.items() if part != "status"}
    return {"status": list(ACTS_ON[action]), **rest}, True


def default_text(action: str) -> str:
    """`active or paused, the statuses cancel acts on`: what the default took, and why."""
    return f"{' or '.join(ACTS_ON[action])}, {why_text(action)}"


def why_text(action: str) -> str:
    """`the statuses cancel acts on`, `the status pause acts on`."""
    noun = "status" if len(ACTS_ON[action]) == 1 else "statuses"
    return f"the {noun} {action} acts on"
