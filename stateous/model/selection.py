"""A bulk job's selection of tokens, as data: the filter's parts and the context test.

Pure: the control plane checks a body's filter into a `Filter` and its store reads the tokens that
match; both use these definitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Filter:
    """A checked filter; None is a part not given."""

    status: tuple[str, ...] | None = None
    state: tuple[str, ...] | None = None
    prefix: str | None = None
    entered_before: datetime | None = None
    entered_after: datetime | None = None
    context: dict[str, Any] | None = None
    tokens: tuple[str, ...] | None = None
    structure: tuple[str, ...] | None = None  # the structures tokens run on


def same_json(one: Any, other: Any) -> bool:
    """JSON equality: `1` equals `1.0`, but never `true`; objects by keys, arrays in order."""
    if isinstance(one, bool) or isinstance(other, bool):
        return isinstance(one, bool) and isinstance(other, bool) and one == other
    if isinstance(one, int | float) and isinstance(other, int | float):
        return one == other
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(same_json(one[k], other[k]) for k in one)
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(
            same_json(a, b) for a, b in zip(one, other, strict=True)
        )
    return type(one) is type(other) and one == other


def context_holds(context: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether each wanted key is in the context with an equal JSON value."""
    return all(key in context and same_json(context[key], value) for key, value in wanted.items())
