"""The rendering of `token show`: the history line of every ledger kind, token lines, listings."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone
from typing import Any

from stateous.model.history import (
    KINDS,
    child_line,
    children_lines,
    duplicate_line,
    history_line,
    history_lines,
    history_text,
    listing_lines,
    local_time,
    payload_json,
    show_lines,
    token_line,
)

T0 = "2026-10-06T23:43:39Z"
T1 = "2026-10-06T23:43:47.575304Z"

# One history that holds every ledger kind, in both forms where a kind has two.
EVERY_KIND: list[tuple[str, dict[str, Any], str]] = [
    ("started", {"context": {"repo": "acme/api"}}, "started"),
    ("started", {"context": {}, "parent": "T-1"}, "started by T-1"),
    ("started", {"context": {}, "schedule": "nightly"}, "started by schedule nightly"),
    (
        "branch_started",
        {"workflow": "review", "token": "T-1.reviews.1.review"},
        "started the child T-1.reviews.1.review",
    ),
    (
        "event_accepted",
        {"event": "__started__", "payload": None, "state": "__start__"},
        "__started__ in START",
    ),
    ("entered", {"state": "coding", "visit": 1}, "entered coding"),
    ("entered", {"state": "draft", "visit": 2}, "entered draft (visit 2)"),
    ("entered", {"state": "__end__", "visit": 1}, "entered END"),
    ("task_queued", {"task": 1, "state": "coding"}, "task 1 queued for coding"),
    (
        "timer_set",
        {"event": "timeout", "due_at": "2026-10-07T05:43:39Z"},
        "timer set: timeout at 2026-10-07 05:43:39",
    ),
    (
        "task_claimed",
        {"task": 2, "supervisor": "build-box-1", "attempt": 1},
        "build-box-1 took task 2 (attempt 1)",
    ),
    (
        "note",
        {"task": 5, "text": "the review sent this order back: a person must change it"},
        "the review sent this order back: a person must change it",
    ),
    ("memory_set", {"state": "coding", "memory_key": "branch"}, "memory set: branch (in coding)"),
    (
        "memory_deleted",
        {"state": "coding", "memory_key": "branch"},
        "memory deleted: branch (in coding)",
    ),
    ("context_changed", {"keys": ["verdict", "zeta"]}, "context changed: verdict, zeta"),
    (
        "event_accepted",
        {"event": "passed", "payload": {"passed": 1, "failed": 0}, "state": "testing"},
        'passed in testing: {"passed": 1, "failed": 0}',
    ),
    ("event_accepted", {"event": "done", "payload": {}, "state": "coding"}, "done in coding"),
    ("task_done", {"task": 2}, "task 2 done"),
    ("task_waiting", {"task": 5}, "task 5 waits: the work goes on outside"),
    ("task_cancelled", {"task": 1}, "task 1 cancelled"),
    (
        "task_failed",
        {"task": 1, "error": "build-box-1 stopped answering: no heartbeat for 2 minutes"},
        "task 1 failed: build-box-1 stopped answering: no heartbeat for 2 minutes",
    ),
    ("task_retrying", {"task": 1, "attempt": 2}, "task 1 is tried again (attempt 2)"),
    (
        "event_rejected",
        {"event": "done", "reason": "token 'TICKET-3' is cancelled; it takes no events"},
        "done refused: token 'TICKET-3' is cancelled; it takes no events",
    ),
    ("timer_fired", {"event": "stuck"}, "timer fired: stuck"),
    ("paused", {}, "paused"),
    ("event_deferred", {"event": "done", "payload": None, "arrival": 1}, "done held while paused"),
    ("resumed", {}, "resumed"),
    ("event_replayed", {"event": "done"}, "done applied on resume"),
    (
        "event_dropped",
        {"event": "done", "reason": "the token was cancelled"},
        "done dropped on resume: the token was cancelled",
    ),
    ("completed", {}, "completed"),
    (
        "failed",
        {"reason": "'coding' failed, and has no transition on 'error': boom"},
        "failed: 'coding' failed, and has no transition on 'error': boom",
    ),
    ("cancelled", {}, "cancelled"),
    (
        "cancelled",
        {"reason": "the parent left 'reviews' on 'joined'"},
        "cancelled: the parent left 'reviews' on 'joined'",
    ),
    ("retried", {"state": "coding"}, "retried in coding"),
    ("moved", {"from": "testing", "to": "coding"}, "moved from testing to coding"),
    (
        "migrated",
        {
            "from": "sha256:" + "99ab12cd" * 8,
            "to": "sha256:" + "77ef12ab" * 8,
            "state": "review",
            "into": "checking",
        },
        "migrated to sha256:77ef12ab… (review → checking)",
    ),
    (
        "migrated",
        {
            "from": "sha256:" + "99ab12cd" * 8,
            "to": "sha256:" + "77ef12ab" * 8,
            "state": "review",
            "into": "checking",
            "keys": ["priority", "team"],
        },
        "migrated to sha256:77ef12ab… (review → checking); context changed: priority, team",
    ),
    ("mystery", {"a": 1}, 'mystery {"a": 1}'),
]


def _entries() -> list[dict[str, Any]]:
    return [
        {"seq": n, "at": T0 if n < 10 else T1, "kind": kind, "data": data}
        for n, (kind, data, _) in enumerate(EVERY_KIND, start=1)
    ]


def test_one_history_with_every_ledger_kind() -> None:
    expected = "\n".join(
        f"{'23:43:39' if n < 10 else '23:43:47'}  #{n}  {text}"
        for n, (_, _, text) in enumerate(EVERY_KIND, start=1)
    )
    rendered = "\n".join(str(line) for line in history_lines(_entries(), UTC))
    assert rendered == expected
    assert {kind for kind, _, _ in EVERY_KIND} == KINDS | {"mystery"}


def test_the_history_of_ticket_3_in_local_time() -> None:
    entries = [
        {
            "seq": 5,
            "at": "2026-10-16T20:39:47Z",
            "kind": "timer_set",
            "data": {"event": "timeout", "due_at": "2026-10-17T02:39:47Z"},
        },
        {"seq": 6, "at": "2026-10-16T20:39:48.123456Z", "kind": "paused", "data": {}},
    ]
    plus_two = timezone(timedelta(hours=2))
    assert [str(line) for line in history_lines(entries, plus_two)] == [
        "22:39:47  #5  timer set: timeout at 2026-10-17 04:39:47",
        "22:39:48  #6  paused",
    ]


def test_missing_fields_render_as_a_question_mark() -> None:
    assert history_text({"kind": "task_claimed", "data": {}}) == "? took task ? (attempt ?)"
    assert history_text({"kind": "task_claimed", "data": [1, 2]}) == "? took task ? (attempt ?)"
    assert history_text({"kind": "context_changed", "data": {"keys": "x"}}) == "context changed: ?"
    assert history_text({"kind": "timer_set", "data": {"event": "t"}}) == "timer set: t at ?"
    assert history_text({"kind": "timer_set", "data": {"event": "t", "due_at": "soon"}}) == (
        "timer set: t at soon"
    )
    assert history_text({"kind": "other", "data": None}) == "other {}"


def test_a_time_that_is_not_iso_is_printed_as_is() -> None:
    assert local_time("yesterday") == "yesterday"
    line = history_line({"seq": 1, "at": "yesterday", "kind": "paused", "data": {}})
    assert str(line) == "yesterday  #1  paused"


def test_a_naive_time_counts_as_utc() -> None:
    assert local_time("2026-10-16 20:48:44.845389", UTC) == "20:48:44"


def test_payload_is_compact_ascii_json_cut_at_80() -> None:
    assert payload_json({"a": "é", "b": [1, 2]}) == '{"a": "\\u00e9", "b": [1, 2]}'
    long = {
        "branches": [{"workflow": "review", "token": "T-1.reviews.1.review", "status": "completed"}]
    }
    text = payload_json(long)
    assert len(text) == 80 and text.endswith("...")
    assert (
        text == '{"branches": [{"workflow": "review", "token": "T-1.reviews.1.review", "status...'
    )
    exactly = {"k": "x" * 71}
    assert len(payload_json(exactly)) == 80 and not payload_json(exactly).endswith("...")
    joined = {
        "kind": "event_accepted",
        "data": {"event": "joined", "payload": long, "state": "reviews"},
    }
    assert history_text(joined).startswith('joined in reviews: {"branches": [')


def test_token_lines() -> None:
    assert str(
        token_line({"token": "TICKET-1", "state": "coding", "status": "active", "visit": 1})
    ) == ("TICKET-1: coding, active")
    two = {"token": "ORDER-2", "state": "draft", "status": "active", "visit": 2}
    assert str(token_line(two)) == "ORDER-2: draft (visit 2), active"
    assert str(token_line({"token": "T-1", "state": "__end__", "status": "completed"})) == (
        "T-1: END, completed"
    )
    assert str(
        token_line({"token": "T-1", "state": "__start__", "status": "completed", "visit": 0})
    ) == ("T-1: START, completed")
    assert str(token_line({"token": "T", "state": "s", "status": "active", "visit": True})) == (
        "T: s, active"
    )
    assert str(duplicate_line(two)) == "duplicate: ORDER-2: draft (visit 2), active"
    assert str(child_line(two)) == "  child ORDER-2: draft (visit 2), active"


def test_listing_and_children() -> None:
    assert [str(line) for line in listing_lines([])] == ["no tokens"]
    tokens = [{"token": f"T-{n}", "state": "s", "status": "active", "visit": 1} for n in range(3)]
    assert [str(line) for line in listing_lines(tokens)] == [
        "T-0: s, active",
        "T-1: s, active",
        "T-2: s, active",
    ]
    many = children_lines((tokens * 334)[:1000])[-2:]
    assert [str(line) for line in many] == [
        "  child T-0: s, active",
        "  (only the 1000 most recently moved children are shown; there can be more)",
    ]
    assert len(children_lines(tokens)) == 3


def test_show_lines_and_styles() -> None:
    token = {"token": "TICKET-1", "state": "reviews", "status": "active", "visit": 1}
    child = {"token": "TICKET-1.reviews.1.security-review", "state": "triage", "status": "active"}
    lines = show_lines(token, [child], _entries()[:1], UTC)
    assert [str(line) for line in lines] == [
        "TICKET-1: reviews, active",
        "  child TICKET-1.reviews.1.security-review: triage, active",
        "23:43:39  #1  started",
    ]
    assert ("active", "green") in lines[0].segments
    assert lines[0].text == str(lines[0])
