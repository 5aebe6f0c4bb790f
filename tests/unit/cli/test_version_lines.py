"""The lines of versions on the command line: a token's version on its first
line, a dry run's refusals by code, a version's row."""

from __future__ import annotations

from typing import Any

from stateous.cli.version_names import version_note
from stateous.cli.versions import table_row
from stateous.model.versions import context_hint, digits, refused_line, short

NEW = {"checksum": "sha256:77ef12ab" + "0" * 56, "structure": "sha256:5a0c" + "1" * 60}
TUNED = {"checksum": "sha256:88aa00bb" + "0" * 56, "structure": "sha256:c4e2" + "2" * 60}
OLD = {"checksum": "sha256:99ab12cd" + "0" * 56, "structure": TUNED["structure"]}
ROWS: list[dict[str, Any]] = [
    {**NEW, "current": True, "first_served_at": "2026-10-21T09:14:02Z", "live": 3},
    {**TUNED, "current": False, "first_served_at": "2026-10-03T10:00:00Z", "live": 1204},
    {**OLD, "current": False, "first_served_at": "2026-10-02T16:40:11Z", "live": 0},
]


def test_a_token_of_another_version_names_its_newest_checksum() -> None:
    token = {"token": "T-1", "structure": OLD["structure"]}
    assert version_note(token, ROWS) == " (version 88aa00bb; new tokens start on 77ef12ab)"


def test_a_token_of_the_current_version_or_without_a_structure_says_nothing() -> None:
    assert version_note({"structure": NEW["structure"]}, ROWS) == ""
    assert version_note({}, ROWS) == ""
    assert version_note({"structure": "sha256:ffff"}, ROWS) == ""  # not on record: no guess
    assert version_note({"structure": OLD["structure"]}, []) == ""  # an older control plane


def test_digits_and_short() -> None:
    assert short(OLD["checksum"]) == "99ab12cd"
    assert digits(OLD["checksum"], 12) == "99ab12cd0000"
    assert short(None) == "?"


def test_a_version_row() -> None:
    row = table_row(ROWS[1])
    assert row[:3] == ["88aa00bb0000", "c4e222222222", "no"]
    assert row[4] == "1,204"
    assert table_row(ROWS[0])[2] == "yes"


def test_the_refused_line() -> None:
    refused = {"unknown_state": 3, "invalid_context": 1}
    examples = {"unknown_state": ["FAIL-1", "FAIL-2", "FAIL-3"], "invalid_context": ["ORD-9"]}
    assert refused_line(refused, examples) == (
        "refused: 3 unknown_state (FAIL-1, FAIL-2, FAIL-3), 1 invalid_context (ORD-9)"
    )
    many = {"token_in_parallel": 1200}
    ids = {"token_in_parallel": ["P-1", "P-2", "P-3", "P-4", "P-5"]}
    assert (
        refused_line(many, ids) == "refused: 1,200 token_in_parallel (P-1, P-2, P-3, P-4, P-5, ...)"
    )
    assert refused_line({"same_version": 2}, None) == "refused: 2 same_version"
    assert refused_line({}, {}) == "refused: none"


def test_the_refused_line_names_the_field_and_the_flag() -> None:
    refused = {"invalid_context": 3, "unknown_state": 1}
    examples = {"invalid_context": ["ORDER-4", "ORDER-5"], "unknown_state": ["FAIL-1"]}
    reasons = {"invalid_context": "'priority' is required"}
    hints = {"invalid_context": context_hint(reasons["invalid_context"], "--context")}
    assert refused_line(refused, examples, reasons, hints) == (
        "refused: 3 invalid_context: 'priority' is required (ORDER-4, ORDER-5, ...); add it with "
        "--context, 1 unknown_state (FAIL-1)"
    )
    assert context_hint("priority: 'high' is not of type 'integer'", "--context") == (
        "set it with --context"
    )
    assert refused_line({"invalid_context": 1}, None, {"invalid_context": 5}) == (
        "refused: 1 invalid_context"  # a reason that is not text is left out
    )
