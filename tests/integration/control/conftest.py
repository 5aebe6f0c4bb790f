"""API fixtures: the orders app on each backend, and an httpx client; a fake clock for the tests
that move time by hand."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from stateous.control.clock import FakeClock
from tests.support.app import RunningApi, running_api
from tests.support.graphs import ORDERS, SDLC


@pytest.fixture
def clock() -> FakeClock:
    """The control plane's clock, moved by the test."""
    return FakeClock()


@pytest.fixture
def api(migrated_db_url: str, request: pytest.FixtureRequest) -> Iterator[RunningApi]:
    """The orders starter served over a real socket; on the `clock` fixture in a test marked
    `fake_clock` (a module's `pytestmark = pytest.mark.fake_clock`), else on the system's."""
    fake = request.node.get_closest_marker("fake_clock") is not None
    clock = request.getfixturevalue("clock") if fake else None
    with running_api(migrated_db_url, ORDERS, clock, migrate_first=False) as running:
        yield running


@pytest.fixture
def sdlc_api(migrated_db_url: str) -> Iterator[RunningApi]:
    """The sdlc workflow served over a real socket."""
    with running_api(migrated_db_url, SDLC, migrate_first=False) as running:
        yield running


@pytest.fixture
def http(api: RunningApi) -> Iterator[httpx.Client]:
    """A client of the orders app."""
    with httpx.Client(base_url=api.url, timeout=30) as client:
        yield client


@pytest.fixture
def sdlc_http(sdlc_api: RunningApi) -> Iterator[httpx.Client]:
    """A client of the sdlc app."""
    with httpx.Client(base_url=sdlc_api.url, timeout=30) as client:
        yield client
