"""The selection of a bulk job: a body's filter checked into a `Filter`.

Every part is optional and all must hold; only top tokens are ever selected. A bad part is
`422 invalid_body` with a sentence that names it.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from stateous.control.clock import iso
from stateous.control.errors import invalid
from stateous.model.selection import Filter
from stateous.model.wire import TOKEN_STATUSES

PARTS = (
    "status", "state", "prefix", "entered_before", "entered_after", "context", "tokens",
    "structure",
)  # fmt: skip
MAX_TOKENS = 10_000
#: A structure: `sha256:` and 64 lower-case hex digits.
STRUCTURE = re.compile(r"sha256:[0-9a-f]{64}")


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


def _structures(value: Any, known: Collection[str] | None) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(
        isinstance(item, str) and STRUCTURE.fullmatch(item) for item in value
    ):
        raise _refuse("the filter's 'structure' is a list of 'sha256:' and 64 hex digits each")
    for item in value:
        if known is not None and item not in known:
            raise _refuse(
                f"the filter's 'structure' names {item!r}, which is no version's on record"
            )
    return tuple(dict.fromkeys(value))


def parse_filter(
    value: Any, states: Collection[str], structures: Collection[str] | None = None
) -> Filter:
    """Check a body's `filter` against the `states` of the workflow's versions and the
    `structures` on record (None: any well-formed one); absent or null is `{}`."""
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
        structure=_structures(get("structure"), structures) if "structure" in value else None,
    )  # fmt: skip


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
