"""A bulk cancel of 5,000 tokens selected by context equality while a supervisor works (issue
14), against a real `serve` on SQLite and Postgres: every matched token is cancelled
exactly once (one `cancelled` row with `by.bulk` each), none of the supervisor's other tokens is
touched, and they all end.

The longest test of the suite (the job's own pacing, which rests as long as each batch took,
sets most of its time): this file runs it on SQLite, test_bulk_faults_5000_postgres.py on
Postgres, so that pytest-xdist's `--dist loadfile` runs the two on two workers at the same time
while the rest of the suite goes on on the others (tests/conftest.py hands these files out
first)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.faults.harness import Plane, make_folder, supervise
from tests.faults.test_bulk_faults import BY, bulk, exactly_once, start_many, statuses, wait_job
from tests.support import backends, free_port

#: The long tier (`make test-long`): minutes of a 5,000-token job.
pytestmark = pytest.mark.long

#: How often the test asks for the job: a 5,000-token job runs for minutes, and each poll is a
#: read the job shares the database with.
POLL_SECONDS = 1.0


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("backend", [b for b in backends() if b == "sqlite"])
def test_a_bulk_cancel_of_5000_tokens_while_a_supervisor_works(db_url: str, tmp_path: Path) -> None:
    bulk_cancel_of_5000(db_url, tmp_path)


def bulk_cancel_of_5000(db_url: str, tmp_path: Path) -> None:
    """The test, on the database of `db_url`."""
    cp = Plane(db_url, free_port(), tmp_path)
    cp.start_retrying()
    run = None
    try:
        start_many(cp.url, "BULK-", 5000, {"customer": "acme"})
        # The supervisor keeps working through the whole job, on its own tokens and on the
        # job's (claims and reports racing the cancels), but slowly on the job's: each of their
        # routines takes up to 2.5 s, so the test stays a bulk test and not a throughput run
        # whose supervisor work grows with the job's time (on a loaded machine, several times).
        run = supervise(make_folder(tmp_path, cp.url, "box-1", tasks=2, slow="BULK-"))
        start_many(cp.url, "WORK-", 40, {"customer": "other"})
        job = bulk(cp.url, {"action": "cancel", "filter": {"context": {"customer": "acme"}},
                            "by": BY})  # fmt: skip
        assert job == {"job": 1, "matched": 5000}
        final = wait_job(cp.url, 1, timeout=1100, every=POLL_SECONDS)  # ~25 tokens/s loaded
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
