"""Bulk jobs under load and faults (spec 80 §2), against real `serve` processes on SQLite and
Postgres: a cancel of 5,000 tokens while a supervisor works, a SIGKILL in the middle of a job and
a restart, and a takeover during a job. Each matched token is acted on exactly once: the ledger
has one `cancelled` row with `by.bulk` per token the job says it did, none twice, none missing."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.faults.harness import Plane, make_folder, supervise
from tests.faults.test_takeover import terminate_backends
from tests.support import free_port, postgres_database

BY = {"actor": "ops", "reason": "the customer left", "via": "api"}


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
    url: str, job: int, timeout: float, until: str = "finished", done: int = 0
) -> dict[str, Any]:
    """Poll until the job has `until` status (or, with `done`, at least that many done)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = job_of(url, job)
            if (done and found["done"] >= done) or (not done and found["status"] == until):
                return found
        except httpx.HTTPError:
            pass  # a restarting control plane
        assert time.monotonic() < deadline, f"job {job} did not get there in {timeout} s"
        time.sleep(0.2)


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


@pytest.mark.timeout(1200)
def test_a_bulk_cancel_of_5000_tokens_while_a_supervisor_works(db_url: str, tmp_path: Path) -> None:
    cp = Plane(db_url, free_port(), tmp_path)
    cp.start_retrying()
    run = None
    try:
        start_many(cp.url, "BULK-", 5000, {"customer": "acme"})
        run = supervise(make_folder(tmp_path, cp.url, "box-1"))
        start_many(cp.url, "WORK-", 40, {"customer": "other"})
        job = bulk(cp.url, {"action": "cancel", "filter": {"context": {"customer": "acme"}},
                            "by": BY})  # fmt: skip
        assert job == {"job": 1, "matched": 5000}
        final = wait_job(cp.url, 1, timeout=1100)  # about 25 tokens/s on a loaded 2-core machine
        exactly_once(db_url, cp.url, 1, 5000)
        # Tokens the supervisor ended before the job reached them are skipped with their code.
        assert set(final["skipped"]) <= {"token_not_active"}
        assert statuses(db_url, "BULK-")["cancelled"] == final["done"]
        # The supervisor's own tokens went on, and none of them was cancelled.
        deadline = time.monotonic() + 300
        while statuses(db_url, "WORK-")["active"] and time.monotonic() < deadline:
            time.sleep(0.5)
        work = statuses(db_url, "WORK-")
        assert "cancelled" not in work and "active" not in work and sum(work.values()) == 40
    finally:
        if run is not None:
            run.stop()
        cp.stop()


def test_a_sigkill_in_the_middle_of_a_job_applies_each_token_once(
    db_url: str, tmp_path: Path
) -> None:
    cp = Plane(db_url, free_port(), tmp_path)
    cp.start_retrying()
    try:
        start_many(cp.url, "K-", 2000, {})
        assert bulk(cp.url, {"action": "cancel", "filter": {"prefix": "K-"}, "by": BY}) == {
            "job": 1, "matched": 2000,
        }  # fmt: skip
        part = wait_job(cp.url, 1, timeout=300, done=300)
        cp.kill()
        assert part["status"] == "running"
        cp.start_retrying()
        final = wait_job(cp.url, 1, timeout=600)
        assert (final["done"], final["skipped"]) == (2000, {})
        exactly_once(db_url, cp.url, 1, 2000)
        assert statuses(db_url, "K-") == Counter({"cancelled": 2000})
    finally:
        if cp.served is not None and cp.served.process.poll() is None:
            cp.stop()


@pytest.mark.skipif(os.environ.get("STATEOUS_TEST_DB") == "sqlite", reason="Postgres only")
def test_a_takeover_during_a_job_applies_each_token_once(tmp_path: Path) -> None:
    with postgres_database("stateous_bulk") as db:
        first = Plane(db, free_port(), tmp_path)
        first.start()
        second = Plane(db, free_port(), tmp_path)
        try:
            start_many(first.url, "TK-", 2000, {})
            body = {"action": "cancel", "filter": {"prefix": "TK-"}, "by": BY}
            assert bulk(first.url, body) == {"job": 1, "matched": 2000}
            wait_job(first.url, 1, timeout=300, done=200)
            assert first.served is not None
            first.served.process.send_signal(signal.SIGSTOP)
            assert terminate_backends(db) >= 1
            second.start_retrying(timeout=60)
            first.served.process.send_signal(signal.SIGCONT)
            assert first.served.process.wait(timeout=30) == 1
            final = wait_job(second.url, 1, timeout=600)
            assert (final["done"], final["skipped"]) == (2000, {})
            exactly_once(db, second.url, 1, 2000)
            assert statuses(db, "TK-") == Counter({"cancelled": 2000})
        finally:
            for cp in (first, second):
                if cp.served is not None and cp.served.process.poll() is None:
                    cp.served.process.send_signal(signal.SIGCONT)
                    cp.stop()
                cp.close_pipes()
