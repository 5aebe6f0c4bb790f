"""What `/` on the tokens screen takes: an id prefix, and `KEY=VALUE` words that find tokens by
their context's search keys, such as `customer=acme order_id=4711`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from stateous.client.search import SearchError, search_pairs

WORD = re.compile(r'(?:[^\s"]|"(?:\\.|[^"\\])*"?)+')
"""A word of the search: spaces part words, except inside JSON quotes (`name="acme corp"`)."""


@dataclass(frozen=True)
class Search:
    """The search typed after `/`: the id prefix (applied to the listing), the context keys
    (sent as `context.KEY=JSON`), or why the `KEY=VALUE` words cannot be used."""

    prefix: str = ""
    context: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None


def parse_search(text: str) -> Search:
    """`text` as a search: with no word holding `=`, all of it is the id prefix, as typed; else
    each `KEY=VALUE` word is a context key (VALUE is JSON when it reads as JSON, else text) and
    the other words, joined by a space, are the prefix."""
    words = WORD.findall(text)
    pairs = [word for word in words if "=" in word]
    if not pairs:
        return Search(prefix=text)
    prefix = " ".join(word for word in words if "=" not in word)
    try:
        return Search(prefix=prefix, context=search_pairs(pairs))
    except SearchError as exc:
        return Search(prefix=prefix, problem=str(exc))
