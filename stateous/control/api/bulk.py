"""The operator routes: `GET /audit` and bulk jobs (`POST /bulk`, `GET /bulk`,
`GET /bulk/{job}`, `POST /bulk/{job}/stop`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar import Request, Response, get, post
from litestar.params import FromPath
from sqlalchemy import Connection

from stateous.control.api import pages
from stateous.control.api.acts import by_of
from stateous.control.api.answers import answer, plane_of, read_body, run
from stateous.control.clock import iso
from stateous.control.engine import bulk
from stateous.control.engine.bulk_filter import parse_time
from stateous.control.errors import Refusal, invalid
from stateous.control.store import audit

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
JOB_STATUSES = ("running", "finished", "stopped")


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    if (
        not text.isascii()
        or not text.isdigit()
        or len(text) > 18
        or not 1 <= int(text) <= MAX_LIMIT
    ):
        raise invalid("invalid_argument", f"'limit' is a whole number from 1 to {MAX_LIMIT}")
    return int(text)


def _text(name: str, text: str | None, most: int) -> str | None:
    if text is not None and not 1 <= len(text) <= most:
        raise invalid("invalid_argument", f"'{name}' is a text of 1 to {most} characters")
    return text


def audit_query(query: Mapping[str, str | None]) -> dict[str, Any]:
    """The filters of `GET /audit`: `actor`, `token`, `since`, `limit`."""
    since = query.get("since")
    try:
        moment = parse_time("since", since) if since is not None else None
    except Refusal as exc:
        raise invalid(
            "invalid_argument", "'since' is an ISO 8601 time, e.g. 2026-10-16T20:48:44Z"
        ) from exc
    return {
        "actor": _text("actor", query.get("actor"), 64),
        "token": _text("token", query.get("token"), 256),
        "since": moment,
        "limit": _limit(query.get("limit")),
    }


def act_wire(act: audit.Act) -> dict[str, Any]:
    """An operator act as `GET /audit` answers it."""
    return {
        "token": act.token,
        "seq": act.seq,
        "at": iso(act.at),
        "kind": act.kind,
        "actor": act.actor,
        "via": act.via,
        "reason": act.reason,
        "bulk": act.bulk,
    }


def job_segment(segment: str) -> int:
    """A job id path segment: digits only; else, or too large, no such job."""
    if not segment.isascii() or not segment.isdigit() or len(segment) > 18:
        raise bulk.no_job_text(segment)
    return int(segment)


@get("/audit")
async def get_audit(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The operators' acts, newest first, across all tokens; `after=CURSOR` the
    next page (its `Link` header)."""
    names = ("actor", "token", "since", "limit")
    filters = audit_query({name: request.query_params.get(name) for name in names})
    after = pages.cursor_arg(request.query_params.get("after"), "tsi")
    limit = filters.pop("limit")

    def listing(conn: Connection) -> pages.Page:
        key = (after[0], after[1], after[2]) if after is not None else None
        found = audit.acts(conn, **filters, limit=limit + 1, after=key)
        return pages.Page(found, limit, lambda act: (act.at, act.token, act.seq))

    page = await run(request, "audit", listing)
    return pages.paged(request, [act_wire(act) for act in page.rows], page.next)


@post("/bulk", status_code=202)
async def create_bulk(request: Request[Any, Any, Any]) -> Response[bytes]:
    """A dry run (`200`) or a new bulk job (`202`)."""
    body = await read_body(request)
    checked = bulk.check_request(body, by_of(request, body))
    plane = plane_of(request)
    status, found = await run(
        request, "bulk", lambda conn: bulk.create(conn, plane.clock, plane.config, checked)
    )
    return answer(found, status)


@get("/bulk")
async def list_bulk(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Bulk jobs, newest first; `status=` and `limit=` filter; `after=CURSOR` the next page
    (its `Link` header)."""
    status = request.query_params.get("status")
    if status is not None and status not in JOB_STATUSES:
        raise invalid("invalid_argument", "'status' is one of " + ", ".join(JOB_STATUSES))
    limit = _limit(request.query_params.get("limit"))
    after = pages.cursor_arg(request.query_params.get("after"), "i")

    def listing(conn: Connection) -> pages.Page:
        found = bulk.list_wire(conn, limit + 1, status, after[0] if after else None)
        return pages.Page(found, limit, lambda job: (job["job"],))

    page = await run(request, "bulk read", listing)
    return pages.paged(request, page.rows, page.next)


@get("/bulk/{job:str}")
async def get_bulk(request: Request[Any, Any, Any], job: FromPath[str]) -> Response[bytes]:
    """One bulk job and its progress."""
    job_id = job_segment(job)
    return answer(await run(request, "bulk read", lambda conn: bulk.job_wire(conn, job_id)))


@post("/bulk/{job:str}/stop", status_code=200)
async def stop_bulk(request: Request[Any, Any, Any], job: FromPath[str]) -> Response[bytes]:
    """Stop a running job; what is done stays done."""
    job_id = job_segment(job)
    await read_body(request)
    plane = plane_of(request)
    return answer(await run(request, "bulk", lambda conn: bulk.stop(conn, plane.clock, job_id)))


ROUTES = [get_audit, create_bulk, list_bulk, get_bulk, stop_bulk]
"""The audit and bulk routes, registered by `create_app`."""
