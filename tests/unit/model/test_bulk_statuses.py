"""The statuses each bulk action selects when none is given (issue 30 item 4)."""

from __future__ import annotations

import pytest

from stateous.model.bulk_statuses import acting_filter, default_text


@pytest.mark.parametrize(
    ("action", "status", "text"),
    [
        ("pause", ["active"], "active, the status pause acts on"),
        ("resume", ["paused"], "paused, the status resume acts on"),
        ("cancel", ["active", "paused"], "active or paused, the statuses cancel acts on"),
        ("fire", ["active", "paused"], "active or paused, the statuses fire acts on"),
        ("retry", ["failed"], "failed, the status retry acts on"),
    ],
)
def test_no_status_takes_what_the_action_acts_on(action: str, status: list[str], text: str) -> None:
    given = {"state": ["review"], "prefix": "T-"}
    assert acting_filter(action, given) == (
        {"status": status, "state": ["review"], "prefix": "T-"},
        True,
    )
    assert default_text(action) == text
    assert given == {"state": ["review"], "prefix": "T-"}  # the caller's filter is left as it was


def test_an_explicit_status_wins() -> None:
    given = {"status": ["completed"], "state": ["review"]}
    assert acting_filter("pause", given) == (given, False)


def test_an_empty_status_list_is_no_status() -> None:
    assert acting_filter("resume", {"status": []}) == ({"status": ["paused"]}, True)


def test_an_unknown_action_is_left_for_the_control_plane_to_refuse() -> None:
    assert acting_filter("explode", {}) == ({}, False)
