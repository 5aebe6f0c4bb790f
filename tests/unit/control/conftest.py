"""Engine fixtures: a migrated store on each backend, a fake clock, the served graphs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stateous.control.clock import FakeClock
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store, make_engine
from stateous.model.graph import load_graph
from tests.support.graphs import ORDERS, SDLC, graph_text


@pytest.fixture
def store(migrated_db_url: str) -> Iterator[Store]:
    """A store whose schema is at the newest revision."""
    store = Store(make_engine(migrated_db_url))
    yield store
    store.engine.dispose()


@pytest.fixture
def clock() -> FakeClock:
    """A clock at FakeClock's start, the time ORDER-1 is started in the reference rows."""
    return FakeClock()


@pytest.fixture
def orders() -> EngineConfig:
    """The orders starter with `into=`."""
    return EngineConfig(load_graph(graph_text(ORDERS)))


@pytest.fixture
def sdlc() -> EngineConfig:
    """The sdlc reference workflow."""
    return EngineConfig(load_graph(graph_text(SDLC)))
