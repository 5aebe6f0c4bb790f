"""The console's lines of versions: names of 8 hex digits, the header's
`versions 2`, a dry run's refusals, why one token cannot migrate; and `v` over recorded answers."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import DataTable

from stateous.model.versions import refused_line
from stateous.tui.app import ConsoleApp
from stateous.tui.screens.migrate import selection_refusals
from stateous.tui.screens.versions import VersionsScreen
from stateous.tui.versions import (
    live_versions,
    one_refusal,
    token_version,
    version_names,
)
from stateous.tui.widgets.status_bar import render_status
from tests.unit.tui.helpers import plain, settle

NEW = "sha256:77ef12ab" + "0" * 56
NEW_TIMEOUTS = "sha256:88aa0000" + "1" * 56  # the same structure as NEW, a timeout changed
OLD = "sha256:99ab12cd" + "2" * 56
VERSIONS = [
    {"checksum": NEW_TIMEOUTS, "structure": NEW, "current": True, "live": 3},
    {"checksum": NEW, "structure": NEW, "current": False, "live": 0},
    {"checksum": OLD, "structure": OLD, "current": False, "live": 2},
]
STATS = {"tokens": {"active": 5}, "versions": VERSIONS}


def test_a_structure_is_named_by_its_newest_checksum() -> None:
    names = version_names(VERSIONS)
    assert names == {NEW: "88aa0000", OLD: "99ab12cd"}
    assert token_version({"structure": NEW}, names) == "88aa0000"
    assert token_version({"structure": "sha256:abcdef0123" + "3" * 54}, names) == "abcdef01"
    assert token_version({"token": "T-1"}, names) == ""


def test_the_header_counts_the_versions_with_live_tokens_only_when_more_than_one() -> None:
    assert live_versions(VERSIONS) == 2
    two = render_status("http://cp", {"workflow": "orders"}, STATS, None, inbox=[]).plain
    assert two.endswith("versions 2  inbox 0")
    one = [{**VERSIONS[0]}, {**VERSIONS[2], "live": 0}]
    shown = render_status("http://cp", {"workflow": "orders"}, {**STATS, "versions": one}, None)
    assert "versions" not in shown.plain
    assert "versions" not in render_status("http://cp", None, {"tokens": {}}, None).plain


def test_the_refusals_as_the_cli_prints_them() -> None:
    examples = {"unknown_state": ["A", "B"], "same_version": ["C"]}
    assert refused_line({"same_version": 1, "unknown_state": 3}, examples) == (
        "refused: 3 unknown_state (A, B, ...), 1 same_version (C)"
    )
    assert refused_line({}, {}) == "refused: none"
    preview = {"matched": 5, "refused": {"unknown_state": 3}, "examples": examples}
    assert selection_refusals(preview) == (2, "refused: 3 unknown_state (A, B, ...)")
    # The field a context lacks, as the dry run names it (the console gives no flag to add it).
    lacking = {"matched": 4, "refused": {"invalid_context": 3}, "reasons": {
        "invalid_context": "'priority' is required"}, "examples": {"invalid_context": ["O-4"]}}  # fmt: skip
    assert selection_refusals(lacking) == (
        1,
        "refused: 3 invalid_context: 'priority' is required (O-4, ...)",
    )


def test_why_one_token_cannot_migrate() -> None:
    token = {"token": "ORDER-2", "state": "review"}
    assert one_refusal(token, "unknown_state", "77ef12ab") == (
        "unknown_state: version 77ef12ab has no state 'review'; map it with the CLI: "
        "stateous token migrate ORDER-2 --map review=<state>"
    )
    assert one_refusal(token, "invalid_context", "77ef12ab") == (
        "invalid_context: its context does not fit version 77ef12ab; give the values with the "
        "CLI: stateous token migrate ORDER-2 --context JSON"
    )
    assert one_refusal(token, "new_code", "77ef12ab") == "new_code: the control plane refuses it"


async def test_v_over_one_version(console: Callable[..., ConsoleApp]) -> None:
    app = console()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, VersionsScreen)
        table = app.screen.query_one("#versions", DataTable)
        assert [plain(table.get_row_at(n)) for n in range(table.row_count)] == [
            ["77510d7465e1", "77510d7465e1", "yes", "2026-10-16 20:00:00", "6"]
        ]
        await pilot.press("v")  # already shown: not a second time
        await settle(pilot)
        assert len(app.screen_stack) == 3
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.title == "tokens"
