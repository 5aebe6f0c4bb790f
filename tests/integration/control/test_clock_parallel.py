"""A parallel state over HTTP on a real `serve`: listing children, steering, and a child's timeout.

The real clock fires the security child's `timeout="2s"`; the join then moves the parent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx

from tests.support import ServeProcess
from tests.support.graphs import variant, write_graph
from tests.unit.control.harness import DEV

Serve = Callable[..., AbstractContextManager[ServeProcess]]
SEC, DES = "T.reviews.1.security-review", "T.reviews.1.design-review"


def history(client: httpx.Client, token: str) -> list[tuple[str, dict[str, Any]]]:
    return [(r["kind"], r["data"]) for r in client.get(f"/tokens/{token}/history").json()]


def test_a_family_over_http_with_the_real_clock(serve: Serve, db_url: str, tmp_path: Path) -> None:
    doc = variant(DEV)
    doc["workflows"]["security-review"]["states"]["triage"]["timeout"] = "2s"
    graph = write_graph(tmp_path, doc)
    with (
        serve(graph, db_url, env={"STATEOUS_TICK_SECONDS": "0.2"}) as served,
        httpx.Client(base_url=served.url) as client,
    ):
        client.post("/tokens", json={"token": "T", "context": {"repo": "acme/api"}})
        assert client.post("/tokens/T/events/done").json()["state"] == "reviews"
        children = client.get("/tokens", params={"parent": "T"}).json()
        assert [(c["token"], c["parent"], c["state"]) for c in children] == [
            (DES, "T", "look"),
            (SEC, "T", "triage"),
        ]
        answer = client.post(f"/tokens/{DES}/pause")
        assert (answer.status_code, answer.json()) == (409, {
            "error": f"token {DES!r} is a child of 'T': it is part of its parent's work, and "
            "cannot be paused on its own; pause 'T' instead",
            "code": "child_token",
        })  # fmt: skip
        assert client.post("/tokens/T/pause").json()["status"] == "paused"
        assert client.get(f"/tokens/{SEC}").json()["status"] == "paused"
        held = client.post(f"/tokens/{DES}/events/seen")
        assert (held.status_code, held.json()["status"]) == (200, "paused")
        time.sleep(2.5)  # the child's timeout does not fire while paused
        assert client.get(f"/tokens/{SEC}").json()["status"] == "paused"
        assert client.post("/tokens/T/resume").json()["status"] == "active"
        assert client.get(f"/tokens/{DES}").json()["status"] == "completed"
        deadline = time.monotonic() + 10
        while client.get("/tokens/T").json()["state"] != "coding" and time.monotonic() < deadline:
            time.sleep(0.1)
        parent = history(client, "T")
        joined = next(d for k, d in parent if k == "event_accepted" and d["event"] == "joined")
        assert [(b["token"], b["status"], b["final"]) for b in joined["payload"]["branches"]] == [
            (SEC, "failed", "triage"),
            (DES, "completed", "look"),
        ]
        assert history(client, SEC)[-3:] == [
            ("timer_fired", {"event": "timeout"}),
            ("task_cancelled", {"task": 2}),
            ("failed", {"reason": "'triage' timed out: no transition for 'timeout' from 'triage'"}),
        ]
        assert parent[-2:] == [
            ("entered", {"state": "coding", "visit": 2}),
            ("task_queued", {"task": 4, "state": "coding"}),
        ]
        assert client.post("/tokens/T/cancel").json()["status"] == "cancelled"
