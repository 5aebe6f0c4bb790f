"""A takeover during a bulk job on Postgres: the holder is frozen and its
connections ended, a second `serve` takes the hold and finishes the job; each matched token is
cancelled exactly once. In a file of its own so that pytest-xdist runs it beside the others."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from tests.faults.harness import Plane
from tests.faults.test_bulk_faults import (
    BY,
    MATCHED,
    bulk,
    exactly_once,
    start_many,
    statuses,
    wait_job,
)
from tests.faults.test_takeover import terminate_backends
from tests.support import free_port, postgres_database

#: The long tier (`make test-long`): a takeover under a bulk job, a minute and more.
pytestmark = pytest.mark.long


@pytest.mark.skipif(os.environ.get("STATEOUS_TEST_DB") == "sqlite", reason="Postgres only")
# Its own waits add up to 15 minutes on a loaded machine; the suite's 300 s would cut it short.
@pytest.mark.timeout(1000)
def test_a_takeover_during_a_job_applies_each_token_once(tmp_path: Path) -> None:
    with postgres_database("stateous_bulk") as db:
        first = Plane(db, free_port(), tmp_path)
        first.start()
        second = Plane(db, free_port(), tmp_path)
        try:
            start_many(first.url, "TK-", MATCHED, {})
            body = {"action": "cancel", "filter": {"prefix": "TK-"}, "by": BY}
            assert bulk(first.url, body) == {"job": 1, "matched": MATCHED}
            wait_job(first.url, 1, timeout=300, done=200)
            assert first.served is not None
            first.served.process.send_signal(signal.SIGSTOP)
            assert terminate_backends(db) >= 1
            second.start_retrying(timeout=60)
            first.served.process.send_signal(signal.SIGCONT)
            assert first.served.process.wait(timeout=30) == 1
            final = wait_job(second.url, 1, timeout=600)
            assert (final["done"], final["skipped"]) == (MATCHED, {})
            exactly_once(db, second.url, 1, MATCHED)
            assert statuses(db, "TK-") == Counter({"cancelled": MATCHED})
        finally:
            for cp in (first, second):
                if cp.served is not None and cp.served.process.poll() is None:
                    cp.served.process.send_signal(signal.SIGCONT)
                    cp.stop()
                cp.close_pipes()
