"""History lines of retry and move, with the `by` suffix (who, and why) when given."""

from __future__ import annotations

from datetime import UTC

from stateous.model.history import history_line, history_text


def text(kind: str, data: dict[str, object]) -> str:
    return history_text({"seq": 1, "at": "2026-10-16T20:00:00Z", "kind": kind, "data": data})


def test_retried() -> None:
    assert text("retried", {"state": "coding"}) == "retried in coding"
    by = {"actor": "alice", "reason": "the vendor is back", "via": "cli"}
    assert text("retried", {"state": "coding", "by": by}) == (
        "retried in coding [alice, cli: the vendor is back]"
    )


def test_moved() -> None:
    assert text("moved", {"from": "testing", "to": "coding"}) == "moved from testing to coding"
    assert text("moved", {"from": "__start__", "to": "coding", "keys": ["repo"]}) == (
        "moved from START to coding"
    )
    data: dict[str, object] = {
        "from": "coding",
        "to": "testing",
        "by": {"actor": "bob", "via": "console"},
    }
    assert text("moved", data) == "moved from coding to testing [bob, console]"


def test_the_line_and_its_style() -> None:
    entry = {"seq": 7, "at": "2026-10-16T20:00:00Z", "kind": "retried", "data": {"state": "a"}}
    line = history_line(entry, UTC)
    assert str(line) == "20:00:00  #7  retried in a"
    assert line.segments[-1] == ("retried in a", "bold yellow")
