"""The harness of tests/support/processes.py: a `serve` whose stderr goes to a log file (as the
benches start it) is found ready and stopped, and one that cannot start is reported."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support import launch_serve, sqlite_url
from tests.support.graphs import ORDERS, write_graph


def test_a_serve_logging_to_a_file_is_ready_and_stops(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    served = launch_serve(write_graph(tmp_path, ORDERS), sqlite_url(tmp_path), log=log)
    try:
        assert httpx.get(served.url + "/health", timeout=10).status_code == 200
        assert served.process.stdout is None and served.process.stderr is None
        assert f"serving on {served.url} (Ctrl-C stops)" in served.lines
    finally:
        code = served.stop()
    assert code == 0
    assert log.read_text(encoding="utf-8").splitlines() == served.lines


def test_a_serve_that_cannot_start_is_reported_with_its_words(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(RuntimeError) as caught:
        launch_serve(missing, sqlite_url(tmp_path), ready_timeout=60)
    assert str(caught.value).startswith("stateous serve stopped: error: ")
    assert str(missing) in str(caught.value)
