"""Fixtures shared by every suite: databases on each backend, free ports, a real `serve`; and
the order in which pytest-xdist hands out the test files (the longest first, in each tier)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.support import (
    ServeProcess,
    backends,
    free_port,
    postgres_database,
    serve_process,
    sqlite_url,
)
from tests.support.migrated import migrated

#: The files that take longest (seconds of one worker, on a loaded 2-core machine), longest
#: first, in each tier. `make pytest` hands the files out in the order of the collection (`--dist
#: loadfile --no-loadscope-reorder`), so these start at once, each on a worker, while the many
#: short files fill the other workers; a long file handed out last would make the whole run wait
#: for it. xdist hands a worker its next file while the worker has two tests or fewer left to run,
#: so the three files after the first four are quick ones: each waits behind one of the three
#: longest. The long tier's files (`-m long`, `make test-long`) are left out of the default one.
LONGEST_FIRST = (
    # The long tier: one file a worker.
    "tests/faults/test_bulk_faults_5000_postgres.py",  # 195
    "tests/faults/test_bulk_faults_takeover.py",  # 85
    "tests/faults/test_bulk_faults_5000.py",  # 75
    "tests/faults/test_replica_faults.py",  # 45
    # The default tier.
    "tests/faults/test_bulk_faults.py",  # 120
    "tests/integration/control/test_serve.py",  # 110
    "tests/integration/control/test_replicas.py",  # 100
    "tests/integration/supervisor/test_supervise.py",  # 95
    "tests/unit/model/test_durations.py",  # quick
    "tests/unit/model/test_canonical.py",  # quick
    "tests/unit/model/test_history_by.py",  # quick
    "tests/unit/control/test_repair_interleavings.py",  # 60
    "tests/integration/control/test_clock.py",  # 60
    "tests/integration/test_openapi.py",  # 55
    "tests/integration/control/test_registry_live.py",  # 50
    "tests/unit/control/test_random_interleavings.py",  # 50
    "tests/e2e/test_bulk_commands.py",  # 45
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests of LONGEST_FIRST's files first, in its order; the rest keep theirs."""
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(params=backends())
def backend(request: pytest.FixtureRequest) -> str:
    """`sqlite` or `postgres`, as STATEOUS_TEST_DB chooses (both by default)."""
    return str(request.param)


@pytest.fixture
def db_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """A new, empty database on the chosen backend: a SQLite file, or a Postgres database."""
    if backend == "sqlite":
        yield sqlite_url(tmp_path)
        return
    with postgres_database() as url:
        yield url


@pytest.fixture
def migrated_db_url(db_url: str) -> str:
    """`db_url`'s database at the newest revision (a copy of this worker's migrated template)."""
    migrated(db_url)
    return db_url


@pytest.fixture
def port() -> int:
    """A free TCP port on 127.0.0.1."""
    return free_port()


@pytest.fixture
def serve() -> Callable[..., AbstractContextManager[ServeProcess]]:
    """`serve(graph_path, db_url, **options)`: a context manager running a real `stateous serve`."""
    return serve_process
