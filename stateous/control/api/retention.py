"""The retention routes: `GET /export` (reads only), `POST /prune`, and `POST /import`, which
puts exported tokens back."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from litestar import Request, Response, get, post

from stateous.control.api.acts import by_of
from stateous.control.api.answers import answer, read_body, run
from stateous.control.engine import retention
from stateous.control.engine.bulk_filter import parse_time
from stateous.control.errors import Refusal, invalid

PRUNE_PARTS = ("tokens", "ended_before", "by")
IMPORT_PARTS = ("tokens", "by")
_TIME_EXAMPLE = "an ISO 8601 time, e.g. 2026-10-16T20:48:44Z"


def _moment(code: str, name: str, value: Any) -> datetime:
    try:
        return parse_time(name, value)
    except Refusal as exc:
        raise invalid(code, f"'{name}' is {_TIME_EXAMPLE}") from exc


def export_query(query: Mapping[str, str | None]) -> tuple[datetime, str | None, int]:
    """`ended_before` (required), `after` and `limit` (1 to 1000, default 100) of `GET /export`."""
    before = query.get("ended_before")
    if before is None:
        raise invalid("invalid_argument", f"'ended_before' is required: {_TIME_EXAMPLE}")
    after = query.get("after")
    if after is not None and not 1 <= len(after) <= 256:
        raise invalid("invalid_argument", "'after' is a token id of 1 to 256 characters")
    limit = query.get("limit")
    most = retention.MOST
    if limit is not None and not (
        limit.isascii() and limit.isdigit() and len(limit) <= 18 and 1 <= int(limit) <= most
    ):
        raise invalid("invalid_argument", f"'limit' is a whole number from 1 to {most}")
    count = retention.DEFAULT_LIMIT if limit is None else int(limit)
    return _moment("invalid_argument", "ended_before", before), after, count


def prune_body(body: Mapping[str, Any]) -> tuple[list[str], datetime]:
    """The `tokens` (1 to 1000 ids) and `ended_before` of `POST /prune`."""
    unknown = [name for name in body if name not in PRUNE_PARTS]
    if unknown:
        raise invalid(
            "invalid_body", f"a prune has no part {unknown[0]!r}; its parts are tokens, "
            "ended_before, by"
        )  # fmt: skip
    ids = body.get("tokens")
    if (
        not isinstance(ids, list)
        or not 1 <= len(ids) <= retention.MOST
        or not all(isinstance(i, str) and 1 <= len(i) <= 256 for i in ids)
    ):
        raise invalid("invalid_body", f"'tokens' is a list of 1 to {retention.MOST} token ids")
    return ids, _moment("invalid_body", "ended_before", body.get("ended_before"))


def import_body(body: Mapping[str, Any]) -> list[retention.Family]:
    """The `tokens` of `POST /import`: 1 to 1000 export entries, as `GET /export` answers them;
    a bad one is `422 invalid_body` naming it and what is wrong."""
    unknown = [name for name in body if name not in IMPORT_PARTS]
    if unknown:
        raise invalid(
            "invalid_body", f"an import has no part {unknown[0]!r}; its parts are tokens, by"
        )
    entries = body.get("tokens")
    if not isinstance(entries, list) or not 1 <= len(entries) <= retention.MOST:
        raise invalid("invalid_body", f"'tokens' is a list of 1 to {retention.MOST} export entries")
    families = []
    for number, entry in enumerate(entries, start=1):
        try:
            families.append(retention.family_of_entry(entry))
        except retention.BadEntry as exc:
            raise invalid(
                "invalid_body", f"entry {number} of 'tokens' is not an export entry: {exc}"
            ) from None
    return families


@get("/export")
async def export_tokens(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Ended top tokens ended before a time, in id order, with their history and children."""
    names = ("ended_before", "after", "limit")
    before, after, limit = export_query({name: request.query_params.get(name) for name in names})
    return answer(
        await run(request, "export", lambda conn: retention.export_page(conn, before, after, limit))
    )


@post("/prune", status_code=200)
async def prune_tokens(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Delete listed ended top tokens ended before a time, with all their rows."""
    body = await read_body(request)
    ids, before = prune_body(body)
    by = by_of(request, body)
    return answer(await run(request, "prune", lambda conn: retention.prune(conn, ids, before, by)))


@post("/import", status_code=200)
async def import_tokens(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Put exported tokens back, skipping those already there."""
    body = await read_body(request)
    families = import_body(body)
    by = by_of(request, body)
    return answer(
        await run(request, "import", lambda conn: retention.import_page(conn, families, by))
    )


ROUTES = [export_tokens, prune_tokens, import_tokens]
"""The retention routes, registered by `create_app`."""
