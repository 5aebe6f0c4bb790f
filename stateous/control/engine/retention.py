"""Retention: the export of ended top tokens, their prune, and their import.

An export entry is `{"token": <the token object>, "history": [<ledger entries>], "children":
[<entries>]}`, the same shapes `GET /tokens/{id}` and `GET /tokens/{id}/history` answer, so an
imported token reads back byte for byte as it was exported.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DataError, IntegrityError

from stateous.control.clock import iso
from stateous.control.engine.views import history_entry, token_wire
from stateous.control.errors import invalid
from stateous.control.store import retention as store
from stateous.control.store.dialect import dialect_of
from stateous.control.store.ledger import ledger_of
from stateous.control.store.locks import lock_family
from stateous.control.store.records import TokenRecord
from stateous.control.store.tokens import children_of, get_token
from stateous.control.store.traces import insert_traces, trace_of
from stateous.model.tracing import parse_traceparent

log = logging.getLogger("stateous.retention")

#: The most tokens of one export page or one prune.
MOST = 1000
DEFAULT_LIMIT = 100


def entry_of(conn: Connection, token: TokenRecord) -> dict[str, Any]:
    """A token's export entry: the token, its history, its children's entries by id; and
    `trace`, its `traceparent`, when it has one."""
    entry: dict[str, Any] = {
        "token": token_wire(token),
        "history": [history_entry(row) for row in ledger_of(conn, token.token)],
        "children": [entry_of(conn, child) for child in children_of(conn, token.token)],
    }
    trace = trace_of(conn, token.token)
    if trace is not None:
        entry["trace"] = trace
    return entry


def export_page(
    conn: Connection, before: datetime, after: str | None, limit: int
) -> dict[str, Any]:
    """`GET /export`: the entries of up to `limit` ended top tokens ended before `before`, in
    id order after `after`; `next` is the last id of the page, or None when no such token
    follows it."""
    found = store.ended_tops(conn, before, after, limit + 1)
    page = found[:limit]
    following = len(found) > limit
    return {
        "tokens": [entry_of(conn, token) for token in page],
        "next": page[-1].token if following else None,
    }


def prune(
    conn: Connection, ids: Sequence[str], before: datetime, by: dict[str, Any] | None
) -> dict[str, Any]:
    """`POST /prune`: delete each listed token that is an ended top token ended before
    `before`, with its family's rows, each in a savepoint of its own. Answers `{"pruned",
    "skipped": {code: n}}`. No ledger row is left to carry `by`: it goes to the log."""
    pruned, skipped = prune_quietly(conn, ids, before)
    if pruned:
        # The logger's name says `stateous.retention`: the message carries no prefix of its own.
        noun = "token" if pruned == 1 else "tokens"
        log.info("pruned %d %s ended before %s%s", pruned, noun, iso(before), _by_text(by))
    return {"pruned": pruned, "skipped": dict(sorted(skipped.items()))}


def prune_quietly(
    conn: Connection, ids: Sequence[str], before: datetime
) -> tuple[int, Counter[str]]:
    """`prune` without its log line (`serve --retain` logs once an hour): the tokens pruned
    and the skipped ones by code."""
    skipped: Counter[str] = Counter()
    pruned = 0
    for token_id in ids:
        code = _prune_one(conn, token_id, before)
        if code is None:
            pruned += 1
        else:
            skipped[code] += 1
    return pruned, skipped


def _by_text(by: dict[str, Any] | None) -> str:
    if not by:
        return ""
    reason = f": {by['reason']}" if by.get("reason") else ""
    return f" (by {by['actor']}{reason})"


def _prune_one(conn: Connection, token_id: str, before: datetime) -> str | None:
    """Prune one token; None when pruned, else the code it was skipped with."""
    if dialect_of(conn).locks:  # no act of the family runs while its rows go
        lock_family(conn, token_id)
    token = get_token(conn, token_id)
    if token is None or token.parent is not None:  # a child goes only with its top
        return "token_not_found"
    if token.status not in store.ENDED:
        return "token_not_ended"
    ended = store.end_of(conn, token_id, token.status)
    if ended is None or ended >= before:
        return "ended_after"
    savepoint = conn.begin_nested()
    try:
        store.delete_family(conn, store.family_of(conn, token_id))
    except BaseException:
        savepoint.rollback()
        raise
    savepoint.commit()
    return None


# --- import -------------------------------------------------------------------------------------


class BadEntry(ValueError):
    """An export entry that is not of the shape `GET /export` answers."""


@dataclass(frozen=True)
class Family:
    """An exported top token and its descendants, as rows to insert."""

    tokens: list[TokenRecord]
    rows: list[dict[str, Any]]
    #: (token, traceparent) of each token that had a trace.
    traces: list[tuple[str, str]] = field(default_factory=list)

    @property
    def top(self) -> str:
        """The top token's id."""
        return self.tokens[0].token


def family_of_entry(entry: Any) -> Family:
    """The rows of an export entry; `BadEntry` when it is not one."""
    family = Family([], [])
    _add_entry(family, entry, None)
    top = family.tokens[0]
    if top.parent is not None:  # a child comes only within its top's entry
        raise BadEntry(f"token {family.top!r} has a parent: an entry is a top token's")
    if top.status not in store.ENDED:
        raise BadEntry(f"token {family.top!r} is {top.status}, not ended")
    return family


def _add_entry(family: Family, entry: Any, workflow: str | None) -> None:
    if not isinstance(entry, dict) or not {"token", "history", "children"} <= set(entry):
        raise BadEntry("an export entry is an object with 'token', 'history' and 'children'")
    try:
        record = _record(entry["token"], workflow)
        rows = [_row(record.token, item) for item in entry["history"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise BadEntry(f"an export entry's token or history is malformed ({exc})") from None
    family.tokens.append(record)
    family.rows.extend(rows)
    trace = parse_traceparent(entry.get("trace"))
    if trace is not None:
        family.traces.append((record.token, trace))
    # A child's workflow is not in its token object: its parent's `branch_started` names it.
    workflows = {r["data"].get("token"): r["data"].get("workflow") for r in rows
                 if r["kind"] == "branch_started"}  # fmt: skip
    if not isinstance(entry["children"], list):
        raise BadEntry("an export entry's 'children' is a list of entries")
    for child in entry["children"]:
        child_id = child.get("token", {}).get("token") if isinstance(child, dict) else None
        _add_entry(family, child, workflows.get(child_id))


def _time(text: Any) -> datetime:
    """A time of the wire (`...Z`) as the database keeps it (naive UTC)."""
    if not isinstance(text, str) or not text.endswith("Z"):
        raise ValueError(f"{text!r} is not a time of the API")
    return datetime.fromisoformat(text[:-1])


def _record(wire: dict[str, Any], workflow: str | None) -> TokenRecord:
    return TokenRecord(
        token=str(wire["token"]),
        state=str(wire["state"]),
        status=str(wire["status"]),
        visit=int(wire["visit"]),
        context=dict(wire["context"]),
        entered_at=_time(wire["entered_at"]),
        parent=wire.get("parent"),
        workflow=workflow,
        structure=wire.get("structure"),
    )


def _row(token: str, item: dict[str, Any]) -> dict[str, Any]:
    data = item["data"]
    if not isinstance(data, dict):
        raise ValueError("a history entry's data is an object")
    return {
        "token": token,
        "seq": int(item["seq"]),
        "at": _time(item["at"]),
        "kind": str(item["kind"]),
        "key": None,  # idempotency keys are not exported: a pruned token's are forgotten
        "data": data,
    }


class Unstorable(BadEntry):
    """An export entry the database refused to store (a value wider than its column, a token id
    taken by another family): `index` is its place among the entries given."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"it cannot be stored: {reason}")
        self.index = index


class _Taken(Exception):
    """A family whose top is not in the database, but one of its children's ids is."""


@dataclass
class ImportCounts:
    """What an import did: the families put back, those already there, and of the put back
    those whose search keys wait for their graph (this database has none of their version)."""

    imported: int = 0
    skipped: int = 0
    keys_pending: int = 0

    def add(self, other: ImportCounts) -> None:
        """Count `other`'s families too."""
        self.imported += other.imported
        self.skipped += other.skipped
        self.keys_pending += other.keys_pending

    def wire(self) -> dict[str, int]:
        """The answer of `POST /import`."""
        return {"imported": self.imported, "skipped": self.skipped,
                "keys_pending": self.keys_pending}  # fmt: skip


def import_family(conn: Connection, family: Family) -> bool:
    """Put an exported family back; False (nothing written) when a token with its top's id,
    ignoring case, is in the database already."""
    return _import_one(conn, family) != "skipped"


def _import_one(conn: Connection, family: Family) -> str:
    """`skipped`, `imported`, or `keys_pending`: imported, without search keys, as the
    database has no graph of the family's version (the first serve of it indexes them)."""
    if dialect_of(conn).locks:  # two imports of one family: the second finds it there
        lock_family(conn, family.top)
    if store.any_case_exists(conn, family.top):
        return "skipped"
    for record in family.tokens[1:]:  # a child's id taken by another family's token
        if store.any_case_exists(conn, record.token):
            raise _Taken(f"its token {record.token!r} is there already, in another family")
    indexed = store.insert_family(conn, family.tokens, family.rows)
    insert_traces(conn, family.traces)
    return "imported" if indexed else "keys_pending"


def import_families(conn: Connection, families: Sequence[Family]) -> ImportCounts:
    """Put exported families back, each in a savepoint of its own, skipping those already
    there (`import --db` a batch at a time, `POST /import` a page); `Unstorable` when the
    database refuses one (what was written before it stays in the transaction)."""
    counts = ImportCounts()
    for index, family in enumerate(families):
        savepoint = conn.begin_nested()
        try:
            outcome = _import_one(conn, family)
        except _Taken as exc:
            savepoint.rollback()
            raise Unstorable(index, str(exc)) from None
        except (DataError, IntegrityError) as exc:
            savepoint.rollback()
            reason = str(exc.orig or exc).strip().splitlines()[0]
            raise Unstorable(index, reason) from None
        except BaseException:
            savepoint.rollback()
            raise
        savepoint.commit()
        counts.skipped += outcome == "skipped"
        counts.imported += outcome != "skipped"
        counts.keys_pending += outcome == "keys_pending"
    return counts


def import_page(
    conn: Connection, families: Sequence[Family], by: dict[str, Any] | None
) -> dict[str, int]:
    """`POST /import`: put a page of exported families back, skipping those already there;
    `422 invalid_body` naming the entry the database cannot store (the page writes nothing).
    No ledger row is written to carry `by`: it goes to the log."""
    try:
        counts = import_families(conn, families)
    except Unstorable as exc:
        raise invalid("invalid_body", f"entry {exc.index + 1} of 'tokens': {exc}") from None
    if counts.imported:
        noun = "token" if counts.imported == 1 else "tokens"
        log.info("imported %d %s%s", counts.imported, noun, _by_text(by))
    return counts.wire()
