"""Keyset pages of the listing routes (issue 32): the `after=CURSOR` argument and the RFC 8288
`Link: <…&after=CURSOR>; rel="next"` header of a page that more rows follow.

A cursor is the sort key of a page's last row, as JSON in URL-safe base64, opaque to callers:
they pass it back as it came. Each route reads `limit + 1` rows: the extra one says that a
next page exists without counting anything.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from litestar import Request, Response

from stateous.control.api.answers import answer
from stateous.control.errors import invalid

__all__ = ["Page", "cursor_arg", "encode", "moment", "paged", "wire_time"]

#: The longest cursor accepted: a sort key of a time and a 256-character id, with room.
MOST_CHARS = 2048
#: The sentence of a cursor that does not parse, whatever went wrong in it.
BAD_CURSOR = "'after' is a cursor from the Link header of this route's last page; pass it as is"


def encode(key: Sequence[Any]) -> str:
    """The cursor of a sort key (texts, whole numbers and naive UTC times)."""
    plain = [value.isoformat() if isinstance(value, datetime) else value for value in key]
    text = json.dumps(plain, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(text).rstrip(b"=").decode()


def cursor_arg(text: str | None, shape: str) -> list[Any] | None:
    """`after=CURSOR` decoded into its sort key, or None when absent; `422 invalid_argument`
    for anything else than a cursor of this `shape`: one letter a value, `t` a time, `s` a text,
    `i` a whole number."""
    if text is None:
        return None
    if not 1 <= len(text) <= MOST_CHARS:
        raise invalid("invalid_argument", BAD_CURSOR)
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        values = json.loads(raw.decode())
    except (binascii.Error, ValueError, RecursionError):
        raise invalid("invalid_argument", BAD_CURSOR) from None
    if not isinstance(values, list) or len(values) != len(shape):
        raise invalid("invalid_argument", BAD_CURSOR)
    return [_value(letter, value) for letter, value in zip(shape, values, strict=True)]


def _value(letter: str, value: Any) -> Any:
    found = _checked(letter, value)
    if found is None:
        raise invalid("invalid_argument", BAD_CURSOR)
    return found


def _checked(letter: str, value: Any) -> Any:
    """`value` as the sort key's value `letter` says, or None when it is not one."""
    if letter == "t":
        return moment(value) if isinstance(value, str) else None
    if letter == "s":
        return value if isinstance(value, str) and value else None
    return value if type(value) is int and 0 <= value < 2**63 else None


def moment(text: str) -> datetime | None:
    """A naive time as `encode` writes it, or None."""
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        return None
    return found if found.tzinfo is None else None


def wire_time(text: str) -> datetime:
    """A time as the wire writes it (`…Z`), naive UTC as the store keeps it."""
    return datetime.fromisoformat(text.removesuffix("Z"))


class Page:
    """One page of a listing: the rows read (`limit + 1` at most) cut to `limit`, and the
    cursor of the next page when the extra row was there."""

    def __init__(self, rows: Sequence[Any], limit: int, key: Callable[[Any], Sequence[Any]]):
        self.rows = list(rows[:limit])
        self.next = encode(key(self.rows[-1])) if len(rows) > limit else None


def paged(request: Request[Any, Any, Any], items: list[Any], after: str | None) -> Response[bytes]:
    """The JSON array `items`, with the `Link` header of the next page when `after` (its
    cursor) is given: the same path and arguments as `request`, `after` replaced."""
    response = answer(items)
    if after is not None:
        params = [(k, v) for k, v in request.query_params.multi_items() if k != "after"]
        query = urlencode([*params, ("after", after)])
        response.headers["Link"] = f'<{request.url.path}?{query}>; rel="next"'
    return response
