"""Fixtures of the supervisor's integration tests: the sdlc control plane they run against."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.supervisor.procs import sdlc_plane
from tests.support import ServeProcess


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[ServeProcess]:
    """A real `stateous serve` of the supervisor tests' sdlc graph on a new SQLite file (a test
    file that needs another graph defines its own `plane`)."""
    with sdlc_plane(tmp_path) as served:
        yield served
