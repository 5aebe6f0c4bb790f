"""Bulk jobs under faults, against real `serve` processes on SQLite and Postgres: a
SIGKILL in the middle of a job and a restart. Each matched token is acted on exactly once: the
ledger has one `cancelled` row with `by.bulk` per token the job says it did, none twice, none
missing.

The helpers here serve the other `test_bulk_faults_*.py` files too: the 5,000-token cancel while
a supervisor works and the takeover each have a file of their own, so that pytest-xdist's
`--dist loadfile` runs them on different workers at the same time."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from tests.faults.harness import Plane
from tests.support import free_port

BY = {"actor": "ops", "reason": "the customer left", "via": "api"}


#: The tokens of a job that is cut short: enough that the cut falls well inside it (after 300,
#: or 200 for a takeover) with many batches on either side; more only makes the test longer.
MATCHED = 1000


def start_many(url: str, prefix: str, count: int, context: dict[str, Any]) -> None:
    """Start `count` tokens through `POST /tokens/batch`, 1,000 at a time."""
    with httpx.Client(base_url=url, timeout=120) as http:
        for first in range(0, count, 1000):
            starts = [
                {"token": f"{prefix}{n:05}", "context": {"repo": "r", **context}}
                for n in range(first, min(count, first + 1000))
            ]
            answer = http.post("/tokens/batch", json={"tokens": starts})
            assert answer.status_code == 200, answer.text


def bulk(url: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = httpx.post(url + "/bulk", json=body, timeout=120)
    assert answer.status_code == 202, answer.text
    return dict(answer.json())


def job_of(url: str, job: int) -> dict[str, Any]:
    answer = httpx.get(f"{url}/bulk/{job}", timeout=30)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def wait_job(
    url: str, job: int, timeout: float, until: str = "finished", done: int = 0, every: float = 0.2
) -> dict[str, Any]:
    """Poll every `every` seconds until the job has `until` status (or, with `done`, at least
    that many done)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = job_of(url, job)
            if (done and found["done"] >= done) or (not done and found["status"] == until):
                return found
        except httpx.HTTPError:
            pass  # a restarting control plane
        assert time.monotonic() < deadline, f"job {job} did not get there in {timeout} s"
        time.sleep(every)


def bulk_cancels(db_url: str, job: int) -> Counter[str]:
    """How many `cancelled` rows with `by.bulk == job` each token's ledger has."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT token, data FROM ledger WHERE kind = 'cancelled'"))
            found: Counter[str] = Counter()
            for token, data in rows:
                value = data if isinstance(data, dict) else json.loads(data)
                if value.get("by", {}).get("bulk") == job:
                    assert value == {"by": {**BY, "bulk": job}}
                    found[token] += 1
            return found
    finally:
        engine.dispose()


def statuses(db_url: str, prefix: str) -> Counter[str]:
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            query = text("SELECT status, count(*) FROM tokens WHERE token LIKE :p GROUP BY status")
            return Counter(dict(conn.execute(query, {"p": prefix + "%"}).all()))
    finally:
        engine.dispose()


def exactly_once(db_url: str, url: str, job: int, matched: int) -> dict[str, Any]:
    final = job_of(url, job)
    assert final["status"] == "finished" and final["matched"] == matched
    assert final["done"] + sum(final["skipped"].values()) == matched
    cancels = bulk_cancels(db_url, job)
    assert set(cancels.values()) <= {1}, "a token was cancelled twice"
    assert len(cancels) == final["done"]
    return final


def test_a_sigkill_in_the_middle_of_a_job_applies_each_token_once(
    db_url: str, tmp_path: Path
) -> None:
    cp = Plane(db_url, free_port(), tmp_path)
    cp.start_retrying()
    try:
        start_many(cp.url, "K-", MATCHED, {})
        assert bulk(cp.url, {"action": "cancel", "filter": {"prefix": "K-"}, "by": BY}) == {
            "job": 1, "matched": MATCHED,
        }  # fmt: skip
        part = wait_job(cp.url, 1, timeout=300, done=300)
        cp.kill()
        assert part["status"] == "running"
        cp.start_retrying()
        final = wait_job(cp.url, 1, timeout=600)
        assert (final["done"], final["skipped"]) == (MATCHED, {})
        exactly_once(db_url, cp.url, 1, MATCHED)
        assert statuses(db_url, "K-") == Counter({"cancelled": MATCHED})
    finally:
        if cp.served is not None and cp.served.process.poll() is None:
            cp.stop()
