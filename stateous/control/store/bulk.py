"""The rows of bulk jobs: the job, its frozen matches and their progress."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, func, insert, select, update

from stateous.control.store import token_keys
from stateous.control.store.records import TokenRecord
from stateous.control.store.tables import bulk_jobs, bulk_matches, tokens, workflow_versions
from stateous.model.selection import Filter, context_holds

PAGE = 1000  # tokens read per page while matching; ids per IN (...) of an explicit list


@dataclass(frozen=True)
class Job:
    """A bulk job's row."""

    id: int
    action: str
    filter: dict[str, Any]
    event: str | None
    payload: dict[str, Any] | None
    matched: int
    status: str
    created_at: datetime
    finished_at: datetime | None
    by: dict[str, Any] | None


@dataclass(frozen=True)
class Progress:
    """What a job did so far: tokens acted on, and tokens skipped by refusal code."""

    done: int
    skipped: dict[str, int]


def _conditions(found: Filter) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = [tokens.c.parent.is_(None)]
    if found.status is not None:
        where.append(tokens.c.status.in_(found.status))
    if found.state is not None:
        where.append(tokens.c.state.in_(found.state))
    if found.prefix is not None:
        where.append(tokens.c.token.startswith(found.prefix, autoescape=True))
    if found.entered_before is not None:
        where.append(tokens.c.entered_at < found.entered_before)
    if found.entered_after is not None:
        where.append(tokens.c.entered_at > found.entered_after)
    if found.structure is not None:
        where.append(tokens.c.structure.in_(found.structure))
    return where


def _pages(conn: Connection, found: Filter, indexed: bool) -> Iterator[Sequence[Any]]:
    """Pages of (token, entered_at, context) rows in id order that hold the SQL parts (and,
    `indexed`, the context part through `token_keys` where it may)."""
    columns = [tokens.c.token, tokens.c.entered_at]
    if found.context is not None:
        columns.append(tokens.c.context)
    where = _conditions(found)
    if indexed:
        where.extend(token_keys.index_conditions(conn, found) or ())
    if found.tokens is not None:
        ids = sorted(found.tokens)
        for start in range(0, len(ids), PAGE):
            part = ids[start : start + PAGE]
            query = select(*columns).where(and_(*where, tokens.c.token.in_(part)))
            yield conn.execute(query.order_by(tokens.c.token)).all()
        return
    last: str | None = None
    while True:
        page_where = [*where] if last is None else [*where, tokens.c.token > last]
        query = select(*columns).where(and_(*page_where)).order_by(tokens.c.token).limit(PAGE)
        rows = conn.execute(query).all()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def matching(
    conn: Connection, found: Filter, indexed: bool = True
) -> Iterator[tuple[str, datetime]]:
    """Every top token that matches, in id order, with its `entered_at` (`indexed=False`:
    never through `token_keys`)."""
    for page in _pages(conn, found, indexed):
        for row in page:
            if found.context is None or (
                isinstance(row[2], dict) and context_holds(row[2], found.context)
            ):
                yield row[0], row[1]


def records_of(conn: Connection, ids: Sequence[str]) -> list[TokenRecord]:
    """The rows of the tokens `ids` (at most `PAGE`), in id order (a migrate's dry run)."""
    query = select(tokens).where(tokens.c.token.in_(ids)).order_by(tokens.c.token)
    return [TokenRecord.from_row(row) for row in conn.execute(query)]


def structures_on_record(conn: Connection) -> set[str]:
    """The structures of the versions on record (what a filter's `structure` may name)."""
    return set(conn.execute(select(workflow_versions.c.structure).distinct()).scalars())


def insert_job(conn: Connection, values: dict[str, Any]) -> int:
    """A new job row; answers its id."""
    result = conn.execute(insert(bulk_jobs).values(**values).returning(bulk_jobs.c.id))
    return int(result.scalar_one())


def insert_matches(conn: Connection, job: int, ids: Sequence[str]) -> None:
    """Freeze a job's matches, each `pending`."""
    for start in range(0, len(ids), PAGE):
        rows = [{"job": job, "token": t, "status": "pending"} for t in ids[start : start + PAGE]]
        conn.execute(insert(bulk_matches), rows)


def set_matched(conn: Connection, job: int, matched: int) -> None:
    """The number of frozen matches."""
    conn.execute(update(bulk_jobs).where(bulk_jobs.c.id == job).values(matched=matched))


def get_job(conn: Connection, job: int) -> Job | None:
    """A job by id."""
    row = conn.execute(select(bulk_jobs).where(bulk_jobs.c.id == job)).first()
    return Job(**row._mapping) if row is not None else None


def list_jobs(
    conn: Connection, limit: int, status: str | None = None, after: int | None = None
) -> list[Job]:
    """Jobs newest first; `after`: only the jobs with a lower id (the page after it)."""
    query = select(bulk_jobs)
    if after is not None:
        query = query.where(bulk_jobs.c.id < after)
    if status is not None:
        query = query.where(bulk_jobs.c.status == status)
    rows = conn.execute(query.order_by(bulk_jobs.c.id.desc()).limit(limit))
    return [Job(**row._mapping) for row in rows]


def running_jobs(conn: Connection) -> list[Job]:
    """Running jobs, oldest first (the order the control plane applies them in)."""
    query = select(bulk_jobs).where(bulk_jobs.c.status == "running").order_by(bulk_jobs.c.id)
    return [Job(**row._mapping) for row in conn.execute(query)]


def pending(conn: Connection, job: int, limit: int) -> list[str]:
    """The next `limit` tokens of a job not acted on yet, in id order."""
    query = (
        select(bulk_matches.c.token)
        .where(bulk_matches.c.job == job, bulk_matches.c.status == "pending")
        .order_by(bulk_matches.c.token)
        .limit(limit)
    )
    return list(conn.execute(query).scalars())


def take_match(conn: Connection, job: int, token: str) -> bool:
    """Mark a pending match of a running job `done`; False when it was not pending (another
    applier had it) or the job no longer runs (stopped).

    On Postgres the row's lock makes a second applier wait, then find it no longer pending.
    """
    running = select(bulk_jobs.c.id).where(bulk_jobs.c.id == job, bulk_jobs.c.status == "running")
    result = conn.execute(
        update(bulk_matches)
        .where(
            bulk_matches.c.job == job,
            bulk_matches.c.token == token,
            bulk_matches.c.status == "pending",
            running.exists(),
        )
        .values(status="done")
    )
    return result.rowcount == 1


def skip_match(conn: Connection, job: int, token: str, code: str) -> None:
    """Mark a taken match `skipped` with the refusal's code."""
    conn.execute(
        update(bulk_matches)
        .where(bulk_matches.c.job == job, bulk_matches.c.token == token)
        .values(status="skipped", code=code)
    )


def progress(conn: Connection, job: int) -> Progress:
    """Tokens done and skipped by code."""
    return progress_of(conn, [job])[job]


def progress_of(conn: Connection, jobs: Sequence[int]) -> dict[int, Progress]:
    """The progress of each of `jobs` in one statement (a page of `GET /bulk`)."""
    query = (
        select(bulk_matches.c.job, bulk_matches.c.status, bulk_matches.c.code, func.count())
        .where(bulk_matches.c.job.in_(jobs), bulk_matches.c.status != "pending")
        .group_by(bulk_matches.c.job, bulk_matches.c.status, bulk_matches.c.code)
    )
    done = dict.fromkeys(jobs, 0)
    skipped: dict[int, dict[str, int]] = {job: {} for job in jobs}
    for job, status, code, count in conn.execute(query):
        if status == "done":
            done[job] += count
        else:
            skipped[job][str(code)] = skipped[job].get(str(code), 0) + count
    return {job: Progress(done[job], dict(sorted(skipped[job].items()))) for job in jobs}


def has_pending(conn: Connection, job: int) -> bool:
    """Whether a job has a token left to act on."""
    return bool(pending(conn, job, 1))


def end_job(conn: Connection, job: int, status: str, at: datetime) -> bool:
    """Move a running job to `finished` or `stopped`; False when it was not running."""
    result = conn.execute(
        update(bulk_jobs)
        .where(bulk_jobs.c.id == job, bulk_jobs.c.status == "running")
        .values(status=status, finished_at=at)
    )
    return result.rowcount == 1
