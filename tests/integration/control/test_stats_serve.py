"""`GET /stats` of a real `serve` from the counts of migration 0013, on SQLite and
Postgres: the figures after starts, a parallel state's children and a cancel, and on Postgres
the holder folding the deltas in the background without changing an answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from tests.integration.supervisor.procs import wait_until
from tests.support import serve_process
from tests.support.graphs import DEV, write_graph

REPO = {"repo": "acme/api"}


def post(url: str, path: str, body: dict[str, Any], status: int = 200) -> Any:
    answer = httpx.post(url + path, json=body, timeout=30)
    assert answer.status_code == status, answer.text
    return answer.json()


def figures(url: str) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    answer = httpx.get(f"{url}/stats", timeout=30)
    assert answer.status_code == 200, answer.text
    found = answer.json()
    return found["tokens"], found["states"]


def test_stats_answers_from_the_counts_and_the_fold_keeps_them(db_url: str, tmp_path: Path) -> None:
    graph = write_graph(tmp_path, DEV)
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with serve_process(graph, db_url, cwd=tmp_path) as served:
            url = served.url
            for token in ("A", "B", "C"):
                post(url, "/tokens", {"token": token, "context": REPO}, 201)
            grant = post(url, "/tasks/claim", {"supervisor": "box", "states": ["coding"]})
            post(url, f"/tasks/{grant['task']}/report", {"kind": "event", "event": "done"})
            post(url, "/tokens/C/cancel", {})
            tokens, states = figures(url)
            assert {k: v for k, v in tokens.items() if v} == {"active": 4, "cancelled": 1}
            assert states["coding"] == {
                "active": 1, "paused": 0, "queued": 1, "claimed": 0, "waiting": 0, "supervisors": 0,
            }  # fmt: skip
            assert states["reviews"]["active"] == 1
            assert states["security-review/triage"] == {
                "active": 1, "paused": 0, "queued": 1, "claimed": 0, "waiting": 0, "supervisors": 0,
            }  # fmt: skip

            def unfolded() -> int:
                with engine.connect() as conn:
                    return int(conn.execute(text("SELECT count(*) FROM stats_deltas")).scalar_one())

            wait_until(lambda: unfolded() == 0, 10, "the deltas folded")
            assert figures(url) == (tokens, states)
    finally:
        engine.dispose()
