"""A bulk migration under a crash: `serve` is killed (SIGKILL) in the middle of a
bulk `migrate` of 2,000 tokens, while a supervisor of each version works beside it. After the
restart every token is on exactly one version with at most one `migrated` row (exactly one for
each token the job moved), no task of a visit before the move is still open, and every token
runs to its end on the version it is on: nothing lost, nothing applied twice."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from stateous.compiler.contract import contract_text
from stateous.model.canonical import checksum, structure
from tests.faults.harness import (
    ENDED,
    OPEN_TASK,
    SDLC_GRAPH,
    Plane,
    check_invariants,
    make_folder,
    outbox_count,
    supervise,
    wait_all_ended,
)
from tests.faults.test_bulk_faults import BY, bulk, start_many, wait_job
from tests.support import free_port

#: The tokens of the job; the kill falls after 300 of them are done.
MATCHED = 2000


def newer_sdlc(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """sdlc with an event `abandoned` from coding to the end: another structure."""
    doc = json.loads(SDLC_GRAPH.read_text(encoding="utf-8"))
    doc["states"]["coding"]["emits"].append("abandoned")
    doc["events"]["abandoned"] = {}
    doc["transitions"].append({"from": "coding", "to": "__end__", "on": "abandoned"})
    path = tmp_path / "sdlc-2.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path, doc


def rows(db_url: str, query: str) -> list[Any]:
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(query)))
    finally:
        engine.dispose()


@pytest.mark.long
@pytest.mark.timeout(1800)
def test_a_sigkill_in_a_bulk_migrate_moves_each_token_once(db_url: str, tmp_path: Path) -> None:
    old_doc = json.loads(SDLC_GRAPH.read_text(encoding="utf-8"))
    new_path, new_doc = newer_sdlc(tmp_path)
    old, new = structure(old_doc), structure(new_doc)
    cp = Plane(db_url, free_port(), tmp_path)
    cp.start_retrying()
    start_many(cp.url, "M-", MATCHED, {})
    cp.stop()
    cp.graph = new_path  # the new version is current; M-* stay on the old one
    cp.start_retrying()
    folders = [
        # The old version's routines are slow, so most tokens are still live on it when the
        # job reaches them; the new version's run fast, so the test ends in minutes.
        make_folder(tmp_path, cp.url, "old", slow="M-"),
        make_folder(tmp_path, cp.url, "new", tasks=16, contract=contract_text(new_doc)),
    ]
    supervisors = [supervise(folder) for folder in folders]
    try:
        answer = bulk(cp.url, {"action": "migrate", "filter": {"prefix": "M-"}, "by": BY})
        job = int(answer["job"])
        part = wait_job(cp.url, job, timeout=300, done=300)
        cp.kill()
        assert part["status"] == "running"
        cp.start_retrying()
        final = wait_job(cp.url, job, timeout=900)
        assert final["matched"] == MATCHED
        assert final["done"] + sum(final["skipped"].values()) == MATCHED
        wait_all_ended(cp.url, timeout=900)
    finally:
        for running in supervisors:
            running.stop()
        cp.stop()
    moved: Counter[str] = Counter()
    for token, data in rows(db_url, "SELECT token, data FROM ledger WHERE kind = 'migrated'"):
        value = data if isinstance(data, dict) else json.loads(data)
        assert value["from"] == checksum(old_doc) and value["to"] == checksum(new_doc)
        moved[token] += 1
    assert set(moved.values()) == {1}, "a token was migrated twice"
    assert len(moved) == final["done"]
    tokens = dict(rows(db_url, "SELECT token, structure FROM tokens WHERE token LIKE 'M-%'"))
    assert len(tokens) == MATCHED
    assert {t: s for t, s in tokens.items() if s == new} == dict.fromkeys(moved, new)
    assert set(tokens.values()) <= {old, new}
    # Every token was active or ended when the job reached it: skipped only as ended.
    assert set(final["skipped"]) <= {"token_not_active"}
    open_tasks = rows(
        db_url,
        "SELECT token, structure FROM tasks WHERE status IN " + str(OPEN_TASK).replace(",)", ")"),
    )
    assert open_tasks == []
    statuses = Counter(s for (s,) in rows(db_url, "SELECT status FROM tokens"))
    assert set(statuses) <= set(ENDED)
    assert all(outbox_count(folder) == 0 for folder in folders)
    check_invariants(db_url)
