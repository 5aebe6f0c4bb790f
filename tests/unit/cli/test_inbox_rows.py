"""`stateous inbox`'s rows: the token (and paused), the state, the local time, the question, the
events with their payload fields."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from stateous.cli.inbox import event_text, row_of


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


VERDICT = {"type": "object", "properties": {"approved": {"type": "boolean"}, "note": {}}}


def test_an_event_names_the_fields_of_its_payload() -> None:
    assert event_text({"event": "reviewed", "payload_schema": VERDICT}) == (
        "reviewed {approved, note}"
    )
    assert event_text({"event": "submitted", "payload_schema": None}) == "submitted"
    assert event_text({"event": "odd", "payload_schema": {"type": "object"}}) == "odd"


def test_a_row_of_an_active_and_of_a_paused_token() -> None:
    entry = {
        "task": 7, "token": "ORDER-7", "state": "review", "visit": 2, "status": "active",
        "since": "2026-10-16T20:49:19.5Z", "note": "approve the refund?",
        "events": [{"event": "reviewed", "payload_schema": VERDICT}],
    }  # fmt: skip
    assert row_of(entry) == (
        "ORDER-7",
        "review",
        "2026-10-16 20:49:19",
        "approve the refund?",
        "reviewed {approved, note}",
    )
    paused = {**entry, "status": "paused", "note": None, "events": []}
    assert row_of(paused) == ("ORDER-7 (paused)", "review", "2026-10-16 20:49:19", "-", "-")
