"""The bulk cancel of 5,000 tokens while a supervisor works (test_bulk_faults_5000.py), on
Postgres: a file of its own, so that pytest-xdist runs it beside the SQLite run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.test_bulk_faults_5000 import bulk_cancel_of_5000
from tests.support import backends

#: The long tier (`make test-long`): minutes of a 5,000-token job.
pytestmark = pytest.mark.long


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("backend", [b for b in backends() if b == "postgres"])
def test_a_bulk_cancel_of_5000_tokens_while_a_supervisor_works(db_url: str, tmp_path: Path) -> None:
    bulk_cancel_of_5000(db_url, tmp_path)
