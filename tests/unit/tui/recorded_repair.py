"""The recorded control plane's repair routes: why, retry and move.

Each keeps the rules the console relies on: a child refused, only a failed token retried, a move
only to a state of the workflow; a retry or a move adds its history entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar import Request, get, post
from litestar.params import FromPath
from litestar.response import Response

WHY: dict[str, list[dict[str, Any]]] = {
    "ORDER-1": [
        {
            "code": "claimed",
            "sentence": "'build-box-1' works on task 2 (attempt 1); its lease ends at "
            "2026-10-16T21:01:10Z unless it beats",
            "since": "2026-10-16T20:59:31Z",
        },
        {
            "code": "last_event_refused",
            "sentence": "'submitted' was refused: no transition for 'submitted' from 'review'",
            "since": "2026-10-16T20:59:50Z",
        },
    ],
    "ORDER-5": [
        {
            "code": "ended",
            "sentence": "token 'ORDER-5' failed in 'draft': 'draft' failed, and has no "
            "transition on 'error': the vendor is down; retry it after the fix, or move it to a "
            "state",
            "since": "2026-10-16T20:30:00Z",
        }
    ],
}


def repair_routes(
    recorded: Any,
    token_or_404: Callable[[str], Any],
    refuse: Callable[[int, str, str], Response[Any]],
    states: list[str],
) -> list[Any]:
    """`GET /tokens/{id}/why`, `POST /tokens/{id}/retry` and `POST /tokens/{id}/move`."""

    @get("/tokens/{ident:str}/why", sync_to_thread=False)
    def why(ident: FromPath[str]) -> Any:
        found = token_or_404(ident)
        if isinstance(found, Response):
            return found
        findings = recorded.why.get(found["token"]) or [
            {"code": "paused" if found["status"] == "paused" else "queued_behind",
             "sentence": f"token '{found['token']}' is {found['status']}"}
        ]  # fmt: skip
        return {"token": found, "findings": findings}

    return [why, *_changes(recorded, token_or_404, refuse, states)]


def _changes(
    recorded: Any,
    token_or_404: Callable[[str], Any],
    refuse: Callable[[int, str, str], Response[Any]],
    states: list[str],
) -> list[Any]:
    def entry(token: dict[str, Any], kind: str, data: dict[str, Any]) -> None:
        rows = recorded.history.setdefault(token["token"], [])
        seq = rows[-1]["seq"] + 1 if rows else 1
        rows.append({"seq": seq, "at": "2026-10-16T21:00:00Z", "kind": kind, "data": data})

    def child(found: dict[str, Any], verb: str, base: str) -> Response[Any]:
        return refuse(
            409,
            "child_token",
            f"token '{found['token']}' is a child of '{found['parent']}': it is part of its "
            f"parent's work, and cannot be {verb} on its own; {base} '{found['parent']}' instead",
        )

    @post("/tokens/{ident:str}/retry")
    async def retry(request: Request[Any, Any, Any], ident: FromPath[str]) -> Any:
        found = token_or_404(ident)
        if isinstance(found, Response):
            return found
        body = await request.json() if await request.body() else {}
        recorded.requests.append(f"retry {found['token']} {body.get('by')}")
        if "parent" in found:
            return child(found, "retried", "retry")
        if found["status"] != "failed":
            return refuse(
                409,
                "token_not_failed",
                f"token '{found['token']}' is {found['status']}; only a failed token can be "
                "retried",
            )
        found.update(status="active", visit=found["visit"] + 1)
        entry(found, "retried", {"state": found["state"], "by": body.get("by")})
        recorded.why.pop(found["token"], None)
        return Response(found, status_code=200)

    @post("/tokens/{ident:str}/move")
    async def move(request: Request[Any, Any, Any], ident: FromPath[str]) -> Any:
        found = token_or_404(ident)
        if isinstance(found, Response):
            return found
        body = await request.json()
        to = body.get("to")
        recorded.requests.append(f"move {found['token']} {to} {body.get('by')}")
        if "parent" in found:
            return child(found, "moved", "move")
        if to not in states:
            return refuse(422, "unknown_state", f"the workflow 'orders' has no state '{to}'")
        data = {"from": found["state"], "to": to, "by": body.get("by")}
        found.update(state=to, status="active" if found["status"] == "failed" else found["status"])
        entry(found, "moved", data)
        recorded.why.pop(found["token"], None)
        return Response(found, status_code=200)

    return [retry, move]
