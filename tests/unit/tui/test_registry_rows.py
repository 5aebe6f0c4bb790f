"""The `o` screen's registry rows and the URL a folder's supervisor really uses (spec 80 §5)."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.unit.tui.helpers import plain
from tui.outbox import SupervisorView
from tui.screens.outboxes import folder_url, registry_row

NOW = datetime(2026, 10, 16, 21, 0, 0, tzinfo=UTC)


def test_a_registry_row_names_host_status_seen_states_and_slots_used() -> None:
    entry = {
        "supervisor": "box-1", "host": "build-box-1", "status": "stale",
        "seen_at": "2026-10-16T20:59:15Z", "states": ["draft", "stock/count"], "slots": 4,
        "running": [3, 9],
    }  # fmt: skip
    assert plain(registry_row(entry, NOW)) == [
        "box-1", "build-box-1", "stale", "45s ago", "draft, stock/count", "2/4",
    ]  # fmt: skip


def test_a_running_supervisor_shows_the_url_it_uses_else_the_folder_s() -> None:
    used = {"url": "http://127.0.0.1:51234", "pid": 1}
    running = SupervisorView("f", url="http://127.0.0.1:8080", running=True, status=used)
    assert folder_url(running) == "http://127.0.0.1:51234"
    stopped = SupervisorView("f", url="http://127.0.0.1:8080", running=False, status=used)
    assert folder_url(stopped) == "http://127.0.0.1:8080"
    unknown = SupervisorView("f", url=None, running=True, status={})
    assert folder_url(unknown) is None
