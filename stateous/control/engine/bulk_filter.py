"""The selection of a bulk job (spec 80 §2): the filter's parts, checked, and the context test.

Every part is optional and all must hold; only top tokens are ever selected. A bad part is
`422 invalid_body` with a sentence that names it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stateous.control.clock import iso
from stateous.control.errors import invalid
from stateous.model.wire import TOKEN_STATUSES

PARTS = ("status", "state", "prefix", "entered_before", "entered_after", "context", "tokens")
MAX_TOKENS = 10_000


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


def _refuse(message: str) -> Exception:
    return invalid("invalid_body", message)


def parse_time(name: str, value: Any) -> datetime:
    """An ISO 8601 time (UTC when it names no zone) as naive UTC, like the database's times."""
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None:
        raise _refuse(f"the filter's {name!r} is an ISO 8601 time, e.g. 2026-10-16T20:48:44Z")
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _names(name: str, value: Any, allowed: Collection[str], what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _refuse(f"the filter's {name!r} is a list of names")
    for item in value:
        if item not in allowed:
            raise _refuse(f"the filter's {name!r} names {item!r}, which is not {what}")
    return tuple(dict.fromkeys(value))


def _tokens(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(
        isinstance(item, str) and 1 <= len(item) <= 256 for item in value
    ):
        raise _refuse("the filter's 'tokens' is a list of token ids")
    if len(value) > MAX_TOKENS:
        raise _refuse(f"the filter's 'tokens' has at most {MAX_TOKENS:,} ids")
    return tuple(dict.fromkeys(value))


def parse_filter(value: Any, states: Collection[str]) -> Filter:
    """Check a body's `filter` against the workflow's `states`; absent or null is `{}`."""
    if value is None:
        return Filter()
    if not isinstance(value, dict):
        raise _refuse("'filter' is an object of status, state, prefix, entered_before, ...")
    unknown = [name for name in value if name not in PARTS]
    if unknown:
        raise _refuse(f"the filter has no part {unknown[0]!r}; its parts are " + ", ".join(PARTS))
    prefix = value.get("prefix")
    if prefix is not None and (not isinstance(prefix, str) or not 1 <= len(prefix) <= 128):
        raise _refuse("the filter's 'prefix' is a text of 1 to 128 characters")
    context = value.get("context")
    if context is not None and not isinstance(context, dict):
        raise _refuse("the filter's 'context' is an object of keys and the values they must equal")
    get = value.get
    return Filter(
        status=_names("status", get("status"), TOKEN_STATUSES, "a token status") if "status" in value else None,
        state=_names("state", get("state"), states, "a state of the workflow") if "state" in value else None,
        prefix=prefix,
        entered_before=parse_time("entered_before", get("entered_before")) if "entered_before" in value else None,
        entered_after=parse_time("entered_after", get("entered_after")) if "entered_after" in value else None,
        context=context,
        tokens=_tokens(get("tokens")) if "tokens" in value else None,
    )  # fmt: skip


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


def as_wire(found: Filter) -> dict[str, Any]:
    """The filter as a job keeps and answers it (only the parts given)."""
    wire: dict[str, Any] = {}
    for name in PARTS:
        value = getattr(found, name)
        if value is None:
            continue
        if isinstance(value, datetime):
            value = iso(value)
        wire[name] = list(value) if isinstance(value, tuple) else value
    return wire
