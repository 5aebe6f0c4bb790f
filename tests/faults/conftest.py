"""The long fault runs (STATEOUS_FAULTS=long) outlast pytest's default timeout of 300 s.

A long test loads 200–500 tokens and waits up to 900 s for them to end; on a loaded 2-core
machine that takes more than five minutes, and the ini's `timeout = 300` stopped it in the middle
(a timeout, not a finding). A test that names its own timeout keeps it.
"""

from __future__ import annotations

import pytest

from tests.faults.harness import LONG

LONG_TIMEOUT = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every fault test without a `timeout` mark of its own 30 minutes in a long run."""
    if not LONG:
        return
    for item in items:
        if item.nodeid.startswith("tests/faults/") and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(LONG_TIMEOUT))
