"""The tokens screen's bulk selection says what each key acts on, as `ACTS_ON` selects it."""

from __future__ import annotations

from stateous.model.bulk_statuses import ACTS_ON
from stateous.tui.screens.tokens import ON_EACH, acting


def test_the_selection_hint_names_the_statuses_of_acts_on() -> None:
    assert ACTS_ON["fire"] == ACTS_ON["cancel"]  # the hint says them once, for `c f`
    keys = (("p", "pause"), ("r", "resume"), ("c f", "cancel"), ("R", "retry"))
    said = ", ".join(f"{key} {' or '.join(ACTS_ON[action])}" for key, action in keys)
    assert f"those each can act on ({said})" == ON_EACH


def test_the_question_names_the_statuses_taken() -> None:
    assert acting("cancel", {"state": ["draft"]}) == (
        {"status": ["active", "paused"], "state": ["draft"]},
        "status active, paused, state draft (the statuses cancel acts on)",
    )
    assert acting("cancel", {"status": ["failed"]}) == ({"status": ["failed"]}, "status failed")
