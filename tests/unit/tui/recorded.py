"""Recorded answers of a control plane, served by a real Litestar app for the console's tests.

The data is fixed (and the clock frozen at NOW) so that the SVG snapshots never change. The app
keeps the rules the console relies on: pause/resume/cancel refusals, a child token refused, a
duplicate idempotency key, and `history?after=`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import httpx
from litestar import Litestar, Request, get, post
from litestar.params import FromPath, FromQuery
from litestar.response import Response

from tests.unit.tui import recorded_repair

NOW = datetime(2026, 10, 16, 21, 0, 0, tzinfo=UTC)
CHECKSUM = "sha256:77510d7465e1e6d8061c1018f6f152e6136aa15304b08e92be3efa62174d7851"

GRAPH: dict[str, Any] = {
    "stateous": 1,
    "workflow": "orders",
    "context": "Item",
    "states": {
        "draft": {"emits": ["submitted"]},
        "review": {"emits": ["reviewed"]},
        "checks": {"parallel": ["stock"], "join": "all"},
    },
    "events": {"submitted": {}, "reviewed": {"payload": "Verdict"}},
    "transitions": [
        {"from": "__start__", "to": "draft"},
        {"from": "draft", "to": "review", "on": "submitted"},
        {"from": "review", "to": "__end__", "on": "reviewed", "when": "payload.approved == true"},
        {"from": "review", "to": "draft", "on": "reviewed", "otherwise": True},
        {"from": "checks", "to": "review", "on": "joined"},
    ],
    "workflows": {
        "stock": {
            "states": {"count": {"emits": ["counted"]}},
            "events": {"counted": {}},
            "transitions": [
                {"from": "__start__", "to": "count"},
                {"from": "count", "to": "__end__", "on": "counted"},
            ],
        }
    },
    "schemas": {
        "Item": {
            "description": "The context of each token of `orders`.",
            "properties": {"title": {"type": "string"}},
            "required": ["title"],
            "type": "object",
        },
        "Verdict": {
            "description": "The payload of the event `reviewed`.",
            "properties": {
                "approved": {"type": "boolean"},
                "note": {"default": "", "type": "string"},
            },
            "required": ["approved"],
            "type": "object",
        },
    },
}


def _token(
    ident: FromPath[str], state: str, status: str, at: str, visit: int = 1, **extra: Any
) -> dict[str, Any]:
    token = {
        "token": ident,
        "state": state,
        "status": status,
        "visit": visit,
        "context": {"title": f"order {ident}", "verdict": None},
        "entered_at": f"2026-10-16T{at}Z",
    }
    token.update(extra)
    return token


TOKENS: list[dict[str, Any]] = [
    _token("ORDER-1", "review", "active", "20:59:30"),
    _token("ORDER-8", "draft", "active", "20:59:10"),
    _token("ORDER-2", "draft", "paused", "20:58:00", visit=2),
    _token("ORDER-9", "review", "active", "20:57:00"),
    _token("ORDER-3", "checks", "active", "20:55:00"),
    _token("ORDER-3.checks.1.stock", "count", "active", "20:55:00", parent="ORDER-3"),
    _token("ORDER-4", "review", "completed", "20:40:00"),
    _token("ORDER-5", "draft", "failed", "20:30:00"),
    _token("ORDER-6", "draft", "cancelled", "20:20:00"),
]

HISTORY: dict[str, list[dict[str, Any]]] = {
    "ORDER-1": [
        {
            "seq": 1,
            "at": "2026-10-16T20:59:00Z",
            "kind": "started",
            "data": {"context": {"title": "order ORDER-1", "verdict": None}},
        },
        {
            "seq": 2,
            "at": "2026-10-16T20:59:00Z",
            "kind": "event_accepted",
            "data": {"event": "__started__", "payload": None, "state": "__start__"},
        },
        {
            "seq": 3,
            "at": "2026-10-16T20:59:00Z",
            "kind": "entered",
            "data": {"state": "draft", "visit": 1},
        },
        {
            "seq": 4,
            "at": "2026-10-16T20:59:00Z",
            "kind": "task_queued",
            "data": {"task": 1, "state": "draft"},
        },
        {
            "seq": 5,
            "at": "2026-10-16T20:59:01Z",
            "kind": "task_claimed",
            "data": {"task": 1, "supervisor": "build-box-1", "attempt": 1},
        },
        {
            "seq": 6,
            "at": "2026-10-16T20:59:30Z",
            "kind": "event_accepted",
            "data": {"event": "submitted", "payload": None, "state": "draft"},
        },
        {"seq": 7, "at": "2026-10-16T20:59:30Z", "kind": "task_done", "data": {"task": 1}},
        {
            "seq": 8,
            "at": "2026-10-16T20:59:30Z",
            "kind": "entered",
            "data": {"state": "review", "visit": 1},
        },
        {
            "seq": 9,
            "at": "2026-10-16T20:59:30Z",
            "kind": "task_queued",
            "data": {"task": 2, "state": "review"},
        },
        {
            "seq": 10,
            "at": "2026-10-16T20:59:31Z",
            "kind": "task_claimed",
            "data": {"task": 2, "supervisor": "build-box-1", "attempt": 1},
        },
        {
            "seq": 11,
            "at": "2026-10-16T20:59:40Z",
            "kind": "note",
            "data": {"task": 2, "text": "asked the reviewer"},
        },
        {
            "seq": 12,
            "at": "2026-10-16T20:59:41Z",
            "kind": "memory_set",
            "data": {"state": "review", "memory_key": "reviewer"},
        },
    ],
}

TASKS: list[dict[str, Any]] = [
    {
        "task": 1,
        "token": "ORDER-1",
        "state": "draft",
        "visit": 1,
        "status": "done",
        "attempt": 1,
        "claimed_by": "build-box-1",
        "lease_until": None,
        "queued_at": "2026-10-16T20:59:00Z",
    },
    {
        "task": 2,
        "token": "ORDER-1",
        "state": "review",
        "visit": 1,
        "status": "claimed",
        "attempt": 1,
        "claimed_by": "build-box-1",
        "lease_until": "2026-10-16T21:01:10Z",
        "queued_at": "2026-10-16T20:59:30Z",
    },
    {
        "task": 4,
        "token": "ORDER-2",
        "state": "draft",
        "visit": 2,
        "status": "claimed",
        "attempt": 2,
        "claimed_by": "build-box-1",
        "lease_until": "2026-10-16T21:00:50Z",
        "queued_at": "2026-10-16T20:58:00Z",
    },
    {
        "task": 5,
        "token": "ORDER-3.checks.1.stock",
        "state": "stock/count",
        "visit": 1,
        "status": "claimed",
        "attempt": 1,
        "claimed_by": "build-box-2",
        "lease_until": "2026-10-16T21:00:25Z",
        "queued_at": "2026-10-16T20:55:00Z",
    },
    {
        "task": 7,
        "token": "ORDER-8",
        "state": "draft",
        "visit": 1,
        "status": "queued",
        "attempt": 0,
        "claimed_by": None,
        "lease_until": None,
        "queued_at": "2026-10-16T20:59:10Z",
    },
    {
        "task": 8,
        "token": "ORDER-9",
        "state": "review",
        "visit": 1,
        "status": "waiting",
        "attempt": 1,
        "claimed_by": "build-box-2",
        "lease_until": None,
        "queued_at": "2026-10-16T20:57:00Z",
    },
]

TIMERS: dict[str, list[dict[str, Any]]] = {
    "ORDER-1": [
        {
            "id": 1,
            "state": "review",
            "visit": 1,
            "event": "reviewed",
            "kind": "timer",
            "status": "pending",
            "set_at": "2026-10-16T20:59:41Z",
            "due_at": "2026-10-16T21:10:00Z",
        },
        {
            "id": 2,
            "state": "draft",
            "visit": 1,
            "event": "timeout",
            "kind": "timeout",
            "status": "cancelled",
            "set_at": "2026-10-16T20:59:00Z",
            "due_at": "2026-10-16T21:59:00Z",
        },
    ]
}

MEMORY: dict[str, list[dict[str, Any]]] = {
    "ORDER-1": [
        {
            "state": "review",
            "key": "reviewer",
            "value": {"name": "Ada", "notes": ["first pass", "second pass", "ready"]},
        },
        {"state": "review", "key": "round", "value": 2},
    ]
}


def refuse(status: int, code: str, message: str) -> Response[Any]:
    """The refusal envelope: `{"error": <sentence>, "code": <code>}` with its status."""
    return Response({"error": message, "code": code}, status_code=status)


class Recorded:
    """The state behind the app: a deep copy of the data, changed by the steering routes."""

    def __init__(self) -> None:
        self.tokens = copy.deepcopy(TOKENS)
        self.history = copy.deepcopy(HISTORY)
        self.keys: set[tuple[str, str]] = set()
        self.requests: list[str] = []
        self.why = copy.deepcopy(recorded_repair.WHY)

    def find(self, ident: FromPath[str]) -> dict[str, Any] | None:
        return next((t for t in self.tokens if t["token"] == ident), None)

    def stats(self) -> dict[str, Any]:
        counts = {s: 0 for s in ("active", "paused", "completed", "failed", "cancelled")}
        states: dict[str, dict[str, int]] = {}
        for token in self.tokens:
            counts[token["status"]] += 1
            key = f"stock/{token['state']}" if "parent" in token else token["state"]
            entry = states.setdefault(
                key, dict.fromkeys(("active", "paused", "queued", "claimed", "waiting"), 0)
            )
            if token["status"] in ("active", "paused"):
                entry[token["status"]] += 1
        for task in TASKS:
            entry = states.setdefault(
                task["state"],
                dict.fromkeys(("active", "paused", "queued", "claimed", "waiting"), 0),
            )
            if task["status"] in entry:
                entry[task["status"]] += 1
        return {
            "tokens": counts,
            "states": states,
            "oldest_queued_at": "2026-10-16T20:59:10Z",
            "serving": "build-box-1:17932:a160cedc",
        }


@get("/health", sync_to_thread=False)
def health() -> dict[str, Any]:
    return {"workflow": "orders", "checksum": CHECKSUM}


@get("/workflow", sync_to_thread=False)
def workflow() -> dict[str, Any]:
    return GRAPH


@get("/workflow/versions", sync_to_thread=False)
def versions() -> list[dict[str, Any]]:
    # One version: the console shows no version column and no `versions` in the header.
    row = {"checksum": CHECKSUM, "structure": CHECKSUM, "current": True,
           "first_served_at": "2026-10-16T20:00:00Z", "live": 6}  # fmt: skip
    return [row]


def make_app(recorded: Recorded) -> Litestar:
    """A Litestar app answering the console's routes from `recorded`."""

    def token_or_404(ident: str) -> dict[str, Any] | Response[Any]:
        found = recorded.find(unquote(ident))
        return (
            found
            if found is not None
            else refuse(404, "token_not_found", f"there is no token '{unquote(ident)}'")
        )

    @get("/stats", sync_to_thread=False)
    def stats() -> dict[str, Any]:
        return recorded.stats()

    @get("/tokens", sync_to_thread=False)
    def tokens(
        status: FromQuery[str | None] = None,
        parent: FromQuery[str | None] = None,
        limit: FromQuery[int] = 100,
    ) -> list[dict[str, Any]]:
        found = [
            t
            for t in recorded.tokens
            if (status is None or t["status"] == status)
            and (parent is None or t.get("parent") == parent)
        ]
        return found[:limit]

    @get("/tokens/{ident:str}", sync_to_thread=False)
    def token(ident: FromPath[str]) -> Any:
        return token_or_404(ident)

    @get("/tokens/{ident:str}/history", sync_to_thread=False)
    def history(ident: FromPath[str], after: FromQuery[int] = 0) -> Any:
        found = token_or_404(ident)
        if isinstance(found, Response):
            return found
        return [e for e in recorded.history.get(found["token"], []) if e["seq"] > after]

    @get("/tokens/{ident:str}/tasks", sync_to_thread=False)
    def token_tasks(ident: FromPath[str]) -> Any:
        return [t for t in TASKS if t["token"] == unquote(ident)]

    @get("/tokens/{ident:str}/timers", sync_to_thread=False)
    def timers(ident: FromPath[str]) -> Any:
        return TIMERS.get(unquote(ident), [])

    @get("/tokens/{ident:str}/memory", sync_to_thread=False)
    def memory(ident: FromPath[str]) -> Any:
        return MEMORY.get(unquote(ident), [])

    @get("/tasks", sync_to_thread=False)
    def tasks(
        status: FromQuery[str | None] = None, limit: FromQuery[int] = 100
    ) -> list[dict[str, Any]]:
        found = [t for t in reversed(TASKS) if status is None or t["status"] == status]
        return found[:limit]

    return Litestar(
        [
            *recorded_repair.repair_routes(recorded, token_or_404, refuse, list(GRAPH["states"])),
            *_steering(recorded, token_or_404),
            health,
            workflow,
            versions,
            stats,
            tokens,
            token,
            history,
            token_tasks,
            timers,
            memory,
            tasks,
        ],
        debug=False,
    )


def _steering(recorded: Recorded, token_or_404: Callable[[str], Any]) -> list[Any]:
    """The routes that change the recorded data: pause, resume, cancel, fire, start."""

    @post("/tokens/{ident:str}/{action:str}", sync_to_thread=False)
    def steer(ident: FromPath[str], action: FromPath[str]) -> Any:
        found = token_or_404(ident)
        if isinstance(found, Response):
            return found
        recorded.requests.append(f"{action} {found['token']}")
        if "parent" in found:
            return refuse(
                409,
                "child_token",
                f"token '{found['token']}' is a child of '{found['parent']}': it is part of its parent's work, and cannot be {action}d on its own; {action} '{found['parent']}' instead",
            )
        allowed = {"pause": ("active",), "resume": ("paused",), "cancel": ("active", "paused")}[
            action
        ]
        if found["status"] not in allowed:
            only = {"pause": "an active", "resume": "a paused", "cancel": "an active or paused"}[
                action
            ]
            verb = {"pause": "paused", "resume": "resumed", "cancel": "cancelled"}[action]
            return refuse(
                409,
                "token_not_active",
                f"token '{found['token']}' is {found['status']}; only {only} token can be {verb}",
            )
        found["status"] = {"pause": "paused", "resume": "active", "cancel": "cancelled"}[action]
        return Response(found, status_code=200)

    @post("/tokens/{ident:str}/events/{event:str}")
    async def fire(
        request: Request[Any, Any, Any], ident: FromPath[str], event: FromPath[str]
    ) -> Any:
        found = token_or_404(ident)
        if isinstance(found, Response):
            return found
        body = await request.json() if await request.body() else {}
        key = request.headers.get("idempotency-key")
        recorded.requests.append(f"fire {found['token']} {event} {body.get('payload')} {key}")
        if key and (found["token"], key) in recorded.keys:
            return Response({"duplicate": True, "token": found}, status_code=200)
        if found["status"] not in ("active", "paused"):
            return refuse(
                409,
                "token_not_active",
                f"token '{found['token']}' is {found['status']}; it takes no events",
            )
        if key:
            recorded.keys.add((found["token"], key))
        seq = len(recorded.history.setdefault(found["token"], [])) + 1
        recorded.history[found["token"]].append(
            {
                "seq": seq,
                "at": "2026-10-16T21:00:00Z",
                "kind": "event_accepted",
                "data": {"event": event, "payload": body.get("payload"), "state": found["state"]},
            }
        )
        return Response(found, status_code=200)

    @post("/tokens")
    async def start(request: Request[Any, Any, Any]) -> Any:
        body = await request.json()
        recorded.requests.append(f"start {body.get('token')} {body.get('context')}")
        found = recorded.find(body["token"])
        if found is not None:
            return Response(found, status_code=200)
        token = _token(body["token"], "draft", "active", "21:00:00")
        token["context"] = {**body.get("context", {}), "verdict": None}
        recorded.tokens.insert(0, token)
        return Response(token, status_code=201)

    return [steer, fire, start]


def transport(recorded: Recorded) -> httpx.ASGITransport:
    """An httpx transport that sends the console's requests to the recorded app in-process."""
    # Litestar's __call__ names its ASGI messages more narrowly than httpx's plain mappings.
    return httpx.ASGITransport(app=make_app(recorded))  # type: ignore[arg-type]
