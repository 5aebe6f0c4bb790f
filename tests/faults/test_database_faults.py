"""A full disk under a SQLite database and lost Postgres connections: every answer is a success,
`503 database_busy` or a clean stop, and no token is corrupt."""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from tests.faults.harness import (
    BUSY,
    Load,
    Plane,
    check_invariants,
    make_folder,
    outbox_count,
    plane,
    scaled,
    supervise,
    wait_all_ended,
)
from tests.faults.test_takeover import terminate_backends
from tests.support import free_port, postgres_database, sqlite_url


def start_until_full(url: str, count: int) -> tuple[list[str], list[str]]:
    """Start tokens one by one: the ids answered 201, and those answered 503 database_busy."""
    made: list[str] = []
    busy: list[str] = []
    with httpx.Client(base_url=url, timeout=30) as http:
        for n in range(count):
            name = f"FULL-{n}"
            answer = http.post("/tokens", json={"token": name, "context": {"repo": "x" * 2000}})
            if answer.status_code == 201:
                made.append(name)
            else:
                assert (answer.status_code, answer.json()) == (503, BUSY), answer.text
                busy.append(name)
    return made, busy


def test_a_full_disk_is_database_busy_and_loses_nothing(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path)
    # A first start makes the schema; then the disk "fills" a little above the file's size.
    with plane(db, free_port(), tmp_path):
        pass
    size = max(p.stat().st_size for p in tmp_path.glob("stateous.db*"))
    full = Plane(db, free_port(), tmp_path, file_limit=size + 64 * 1024)
    full.start()
    try:
        made, busy = start_until_full(full.url, scaled(120, 600))
        assert made and busy, (len(made), len(busy))
        # Reads still work while writes cannot be made.
        assert httpx.get(f"{full.url}/tokens/{made[0]}", timeout=10).status_code == 200
    finally:
        if full.served is not None and full.served.process.poll() is None:
            full.stop()
        full.close_pipes()
    with closing(sqlite3.connect(tmp_path / "stateous.db")) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    # With room again, every token that was answered 201 is there and runs to its end.
    with plane(db, free_port(), tmp_path) as cp:
        folder = make_folder(tmp_path, cp.url, "box-1")
        run = supervise(folder)
        try:
            for name in busy:
                assert httpx.get(f"{cp.url}/tokens/{name}", timeout=10).status_code in (200, 404)
            wait_all_ended(cp.url, timeout=scaled(120, 900))
        finally:
            assert run.stop() == 0
    assert outbox_count(folder) == 0
    figures = check_invariants(db)
    assert figures.tokens >= len(made)
    figures.faults = len(busy)
    figures.write("disk_full_sqlite")


@pytest.mark.skipif(os.environ.get("STATEOUS_TEST_DB") == "sqlite", reason="Postgres only")
def test_lost_postgres_connections_are_database_busy_or_recovered(tmp_path: Path) -> None:
    cuts = scaled(3, 10)
    with postgres_database("stateous_faults") as db, plane(db, free_port(), tmp_path) as cp:
        folder = make_folder(tmp_path, cp.url, "box-1")
        run = supervise(folder)
        load = Load(cp.url, scaled(8, 300))
        load.start()
        try:
            for _ in range(cuts):
                time.sleep(scaled(1, 3))
                terminate_backends(db)
                answer = httpx.get(f"{cp.url}/tokens", timeout=30)
                assert answer.status_code == 200 or (answer.status_code, answer.json()) == (
                    503,
                    BUSY,
                ), answer.text
            load.run_out(cp.url)
        finally:
            code = run.stop()
        assert cp.served is not None and cp.served.process.poll() is None  # it kept serving
        assert not any("Traceback" in line for line in cp.served.read_lines(0.2))
        assert code == 0
        assert outbox_count(folder) == 0
        figures = check_invariants(db)
        assert figures.tokens == load.tokens
        figures.faults = cuts
        figures.write("lost_connections_postgres")
