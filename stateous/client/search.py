"""Finding tokens by their context: `KEY=VALUE` as people type it, and the
`context.KEY=JSON` query parameters of `GET /tokens`. Shared by the CLI and the console."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from stateous.client.errors import ClientError
from stateous.client.wire import decode_json

PARAM = "context."
"""The prefix of a context key's query parameter: `context.customer="acme"`."""


class SearchError(ClientError):
    """A `KEY=VALUE` that names no key, or a key named twice."""


def search_value(text: str) -> Any:
    """`text` as JSON when it is JSON (`4711`, `true`, `"acme"`), else the text itself (`acme`).

    So `customer=acme` needs no quotes, and `order_id=4711` is the number; a text that looks
    like a number is written in JSON quotes (`order_id='"4711"'`)."""
    try:
        return decode_json(text)
    except (ValueError, RecursionError):
        return text


def search_pair(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` as (key, value); `SearchError` when there is no `=` or no key before it."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise SearchError(f"{text!r} is not KEY=VALUE, such as customer=acme")
    return key.strip(), search_value(value)


def search_pairs(texts: Iterable[str]) -> dict[str, Any]:
    """Each `KEY=VALUE` as one key of the search; a key given twice is a `SearchError`."""
    return search_context(search_pair(text) for text in texts)


def search_context(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The `(key, value)` pairs as a search; a key given twice is a `SearchError`."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise SearchError(f"the key {key!r} is given twice; a token's key has one value")
        found[key] = value
    return found


def json_text(value: Any) -> str:
    """A value as the JSON text the control plane compares (compact, UTF-8 as it is)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def context_params(context: Mapping[str, Any] | None) -> dict[str, str]:
    """`{"context.KEY": JSON}` for each key of `context` (none for None)."""
    return {PARAM + key: json_text(value) for key, value in (context or {}).items()}


def shown_pairs(context: Mapping[str, Any]) -> str:
    """A search as typed back: `customer=acme order_id=4711` (a text that would read as JSON,
    or holds a space, in JSON quotes)."""
    return " ".join(f"{key}={_shown(value)}" for key, value in context.items())


def _shown(value: Any) -> str:
    if isinstance(value, str) and search_value(value) == value and " " not in value:
        return value
    return json_text(value)
