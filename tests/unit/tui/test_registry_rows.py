"""The `o` screen's registry rows and the URL a folder's supervisor really uses."""

from __future__ import annotations

from datetime import UTC, datetime

from stateous.client import Page
from stateous.tui.outbox import SupervisorView
from stateous.tui.screens.outboxes import folder_url, registry_row
from stateous.tui.widgets.status_bar import INBOX_LIMIT, render_status
from tests.unit.tui.helpers import plain

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


def test_the_header_warns_of_unserved_states_and_counts_the_inbox() -> None:
    stats = {
        "tokens": {"active": 2},
        "states": {
            "draft": {"queued": 1, "supervisors": 1},
            "review": {"queued": 3, "supervisors": 0},
            "done": {"queued": 0, "supervisors": 0},
            "old": {"queued": 5},  # an older control plane sends no count: no warning
        },
    }
    health = {"workflow": "orders", "checksum": "sha256:0123456789abcdef"}
    # One page of INBOX_LIMIT with a next page: `100+`; the same page as the last: `100`.
    more = Page([{}] * INBOX_LIMIT, "eyJ9")
    text = render_status("http://cp", health, stats, None, inbox=more).plain
    assert text == (
        "http://cp  orders sha256:01234567  ● connected  ⚠ no supervisor for review\n"
        "active 2  paused 0  completed 0  failed 0  cancelled 0  inbox 100+"
    )
    last = render_status("http://cp", health, stats, None, inbox=Page([{}] * INBOX_LIMIT))
    assert last.plain.endswith("inbox 100")
    assert render_status("http://cp", health, None, None, inbox=[]).plain == (
        "http://cp  orders sha256:01234567  ● connected\ninbox 0"
    )
