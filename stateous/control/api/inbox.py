"""The inbox: `GET /inbox?state=&limit=`, the tokens waiting for a person."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get
from sqlalchemy import Connection

from stateous.control.api import pages
from stateous.control.api.answers import plane_of, run
from stateous.control.api.operator import DEFAULT_LIMIT, MAX_LIMIT, _text, _whole
from stateous.control.clock import iso
from stateous.control.store.inbox import Waiting, waiting_tasks
from stateous.model.graph import Graph

__all__ = ["ROUTES", "outside_events", "waiting_wire"]


def outside_events(graph: Graph, workflow: str | None, state: str) -> list[dict[str, Any]]:
    """The events `state` takes from outside (its `emits`), each with its payload's JSON
    Schema (null when the event carries no payload model)."""
    body = graph.bodies[workflow or graph.workflow]
    spec = body.states.get(state)
    events = []
    for name in spec.emits if spec is not None else ():
        model = body.events[name].payload if name in body.events else None
        schema = graph.schemas.get(model) if model is not None else None
        events.append({"event": name, "payload_schema": schema})
    return events


def waiting_wire(graph: Graph, found: Waiting) -> dict[str, Any]:
    """One entry of the inbox; `graph` is the token's own version's."""
    entry = {
        "task": found.task,
        "token": found.token,
        "state": found.state_name,
        "visit": found.visit,
        "status": found.status,
        "since": iso(found.since),
        "note": found.note,
        "events": outside_events(graph, found.workflow, found.state),
    }
    if found.structure is not None:
        entry["structure"] = found.structure
    return entry


@get("/inbox")
async def inbox(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The waiting tasks of active and paused tokens, the longest waiting first; `after=CURSOR`
    the next page (its `Link` header)."""
    state = _text("state", request.query_params.get("state"), 129)
    limit = _whole("limit", request.query_params.get("limit"), 1, MAX_LIMIT, DEFAULT_LIMIT)
    after = pages.cursor_arg(request.query_params.get("after"), "ti")
    since = (after[0], after[1]) if after is not None else None
    versions = plane_of(request).config.versions

    def listing(conn: Connection) -> pages.Page:
        found = waiting_tasks(conn, state, limit + 1, since)
        return pages.Page(found, limit, lambda w: (w.since, w.task))

    page = await run(request, "inbox", listing)
    items = [waiting_wire(versions.of(w.structure), w) for w in page.rows]
    return pages.paged(request, items, page.next)


ROUTES = [inbox]
"""The inbox's route, registered by `create_app`."""
