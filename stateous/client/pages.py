"""The pages of a listing (issue 32): a listing route answers a JSON array, and, when more rows
follow, an RFC 8288 header `Link: <…&after=CURSOR>; rel="next"`; its cursor asks the next page."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

__all__ = ["Page", "next_cursor"]


class Page(list[Any]):
    """One page of a listing: its rows (a list, as before pages), and `next`, the cursor of the
    page after it (pass it as `after=`), or None on the last page."""

    def __init__(self, rows: list[Any], next: str | None = None) -> None:
        super().__init__(rows)
        self.next = next


def next_cursor(response: httpx.Response) -> str | None:
    """The `after` of the `Link` header's `rel="next"`, or None when it has none."""
    link = response.links.get("next", {}).get("url")
    if not link:
        return None
    found = parse_qs(urlsplit(link).query).get("after")
    return found[-1] if found else None
