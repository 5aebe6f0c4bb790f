"""The request of each method of `Client` and `AsyncClient`, built once.

A change's `by` is added by the client, which knows who acts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stateous.client.search import context_params
from stateous.client.wire import Request, header_value, query, segment


def _token(token: str, tail: str = "") -> str:
    return f"/tokens/{segment(token)}{tail}"


# ------------------------------------------------------------ tokens


def start(token: str, context: dict[str, Any] | None) -> Request:
    return Request("POST", "/tokens", body={"token": token, "context": context or {}})


def get(token: str) -> Request:
    return Request("GET", _token(token))


def tokens(
    status: str | None,
    parent: str | None,
    limit: int | None,
    context: Mapping[str, Any] | None = None,
    after: str | None = None,
) -> Request:
    """`GET /tokens`; each key of `context` as `context.KEY=JSON`; `after` a
    page's cursor."""
    params = query(status=status, parent=parent, limit=limit, after=after)
    params |= context_params(context)
    return Request("GET", "/tokens", params=params)


def history(token: str, after: int | None = None) -> Request:
    return Request("GET", _token(token, "/history"), params=query(after=after))


def fire(token: str, event: str, payload: dict[str, Any] | None, key: str | None) -> Request:
    headers = None if key is None else {b"Idempotency-Key": header_value(key)}
    body = {} if payload is None else {"payload": payload}
    return Request("POST", _token(token, f"/events/{segment(event)}"), body, headers=headers)


def steer(token: str, action: str) -> Request:
    """`pause`, `resume`, `cancel` or `retry`."""
    return Request("POST", _token(token, f"/{action}"), body={})


def move(token: str, state: str, context: dict[str, Any] | None) -> Request:
    body: dict[str, Any] = {"to": state}
    if context is not None:
        body["context"] = context
    return Request("POST", _token(token, "/move"), body=body)


def why(token: str) -> Request:
    return Request("GET", _token(token, "/why"))


def migrate(
    token: str,
    to: str | None,
    states: dict[str, str] | None,
    context: dict[str, Any] | None,
    key: str | None,
) -> Request:
    """`POST /tokens/{id}/migrate`: only the parts given are sent."""
    headers = None if key is None else {b"Idempotency-Key": header_value(key)}
    body = migration(to, states, context)
    return Request("POST", _token(token, "/migrate"), body, headers=headers)


def migration(
    to: str | None, states: dict[str, str] | None, context: dict[str, Any] | None
) -> dict[str, Any]:
    """The `to`, `states` and `context` of a migration (one token's, or a bulk `migrate`'s), those
    given."""
    given = {"to": to, "states": states, "context": context}
    return {part: value for part, value in given.items() if value is not None}


# ------------------------------------------------------------ bulk jobs and the audit


def bulk(
    action: str,
    selection: dict[str, Any] | None,
    event: str | None,
    payload: dict[str, Any] | None,
    dry_run: bool,
    migrating: dict[str, Any] | None = None,
) -> Request:
    """`POST /bulk`; `migrating` holds a `migrate`'s `to`, `states` and
    `context`."""
    body: dict[str, Any] = {"action": action, "filter": selection or {}}
    if event is not None:
        body["event"] = event
    if payload is not None:
        body["payload"] = payload
    body.update(migrating or {})
    if dry_run:
        body["dry_run"] = True
    return Request("POST", "/bulk", body=body)


def bulk_job(job: int) -> Request:
    return Request("GET", f"/bulk/{segment(job)}")


def bulk_jobs(limit: int | None, after: str | None = None) -> Request:
    return Request("GET", "/bulk", params=query(limit=limit, after=after))


def stop_bulk(job: int) -> Request:
    return Request("POST", f"/bulk/{segment(job)}/stop", body={})


def audit(
    actor: str | None,
    token: str | None,
    since: str | None,
    limit: int | None,
    after: str | None = None,
) -> Request:
    params = query(actor=actor, token=token, since=since, limit=limit, after=after)
    return Request("GET", "/audit", params=params)


def export(ended_before: str, after: str | None, limit: int | None) -> Request:
    return Request(
        "GET", "/export", params=query(ended_before=ended_before, after=after, limit=limit)
    )


def prune(tokens: list[str], ended_before: str) -> Request:
    return Request("POST", "/prune", body={"tokens": tokens, "ended_before": ended_before})


def import_tokens(entries: list[dict[str, Any]]) -> Request:
    return Request("POST", "/import", body={"tokens": entries})


# ------------------------------------------------------------ schedules


def schedule_body(
    cron: str,
    tz: str | None,
    context: dict[str, Any] | None,
    pattern: str | None,
    catch_up: str | None,
    paused: bool,
) -> dict[str, Any]:
    """A schedule's fields, those given (the others take the route's defaults)."""
    given: dict[str, Any] = {
        "cron": cron, "tz": tz, "context": context, "id": pattern, "catch_up": catch_up,
    }  # fmt: skip
    body = {part: value for part, value in given.items() if value is not None}
    if paused:
        body["paused"] = True
    return body


def add_schedule(name: str, body: dict[str, Any]) -> Request:
    return Request("POST", "/schedules", body={"name": name, **body})


def schedules() -> Request:
    return Request("GET", "/schedules")


def schedule(name: str) -> Request:
    return Request("GET", f"/schedules/{segment(name)}")


def replace_schedule(name: str, body: dict[str, Any]) -> Request:
    return Request("PUT", f"/schedules/{segment(name)}", body=body)


def schedule_act(name: str, action: str) -> Request:
    """`pause` or `resume`."""
    return Request("POST", f"/schedules/{segment(name)}/{action}", body={})


def remove_schedule(name: str) -> Request:
    return Request("DELETE", f"/schedules/{segment(name)}", body={})


# ------------------------------------------------------------ tasks and the graph


def report(task: int, event: str, payload: dict[str, Any] | None, attempt: int | None) -> Request:
    body: dict[str, Any] = {"kind": "event", "event": event}
    if payload is not None:
        body["payload"] = payload
    if attempt is not None:
        body["attempt"] = attempt
    return Request("POST", f"/tasks/{segment(task)}/report", body=body)


def inbox(state: str | None, limit: int | None, after: str | None = None) -> Request:
    return Request("GET", "/inbox", params=query(state=state, limit=limit, after=after))


def supervisors() -> Request:
    return Request("GET", "/supervisors")


def stats() -> Request:
    return Request("GET", "/stats")


def workflow(checksum: str | None = None) -> Request:
    return Request("GET", "/workflow", params=query(checksum=checksum))


def versions() -> Request:
    return Request("GET", "/workflow/versions")
