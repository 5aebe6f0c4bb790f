"""The `by` suffix of an operator's act in `token show` and the console."""

from __future__ import annotations

from typing import Any

import pytest

from stateous.model.history import by_suffix, history_text


@pytest.mark.parametrize(
    ("kind", "data", "text"),
    [
        ("paused", {"by": {"actor": "alice", "reason": "the vendor is down", "via": "console"}},
         "paused [alice, console: the vendor is down]"),
        ("started", {"context": {}, "by": {"actor": "alice", "via": "cli"}}, "started [alice, cli]"),
        ("cancelled", {"by": {"actor": "bob", "reason": "", "via": "api"}}, "cancelled [bob, api]"),
        ("resumed", {"by": {"actor": "bob"}}, "resumed [bob]"),
        ("cancelled", {"by": {"actor": "ops", "via": "cli", "bulk": 7, "reason": "dup"}},
         "cancelled [ops, cli, bulk 7: dup]"),
        ("resumed", {"by": {"bulk": 3}}, "resumed [bulk 3]"),
        ("event_accepted", {"event": "submitted", "payload": None, "state": "draft",
                            "by": {"actor": "carol", "via": "client"}},
         "submitted in draft [carol, client]"),
        ("paused", {}, "paused"),
    ],
)  # fmt: skip
def test_the_suffix(kind: str, data: dict[str, Any], text: str) -> None:
    assert history_text({"kind": kind, "data": data}) == text


@pytest.mark.parametrize("by", [None, "alice", 5, [], {}])
def test_no_suffix_without_a_by_object(by: object) -> None:
    assert by_suffix(by) == ""
