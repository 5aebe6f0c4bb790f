"""Fixtures shared by every suite: databases on each backend, free ports, a real `serve`."""

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
def port() -> int:
    """A free TCP port on 127.0.0.1."""
    return free_port()


@pytest.fixture
def serve() -> Callable[..., AbstractContextManager[ServeProcess]]:
    """`serve(graph_path, db_url, **options)`: a context manager running a real `stateous serve`."""
    return serve_process
