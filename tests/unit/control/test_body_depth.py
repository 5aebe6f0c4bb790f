"""`parse_body`'s limit of 64 levels, with the count of brackets that lets most
bodies skip the walk of their values."""

from __future__ import annotations

import pytest

from stateous.control.api.bodies import MAX_DEPTH, parse_body
from stateous.control.errors import Refusal

DEEP = "the body is not JSON: it is nested more than 64 levels deep"


def nested(levels: int, strings: str = "") -> bytes:
    """An object holding arrays nested to `levels` levels in all, beside `strings` (a string
    whose brackets are not levels)."""
    return (
        b'{"s": "'
        + strings.encode()
        + b'", "a": '
        + b"[" * (levels - 1)
        + b"]" * (levels - 1)
        + b"}"
    )


@pytest.mark.parametrize("strings", ["", "[{" * 100])
def test_sixty_four_levels_are_read(strings: str) -> None:
    assert parse_body(nested(MAX_DEPTH, strings))["s"] == strings


@pytest.mark.parametrize("strings", ["", "[{" * 100])
def test_sixty_five_levels_are_refused(strings: str) -> None:
    with pytest.raises(Refusal) as refused:
        parse_body(nested(MAX_DEPTH + 1, strings))
    assert (refused.value.status, refused.value.code, refused.value.message) == (
        400, "bad_request", DEEP,
    )  # fmt: skip


def test_brackets_in_strings_alone_are_no_levels() -> None:
    body = b'{"s": "' + b"[" * 500 + b'"}'
    assert parse_body(body) == {"s": "[" * 500}
