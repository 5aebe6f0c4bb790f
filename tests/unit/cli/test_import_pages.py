"""`stateous import --url` cuts the file into pages the API takes: at most 1000 entries and
`PAGE_BYTES` of them a request, each with the file position it reached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stateous.cli.import_tokens import PAGE_BYTES, pages
from stateous.cli.prune import entry_line
from stateous.model.errors import StateousError


def entry(token: str, text: str = "") -> dict[str, Any]:
    wire = {"token": token, "state": "coding", "status": "cancelled", "visit": 1,
            "context": {"text": text}, "entered_at": "2026-01-01T00:00:00Z"}  # fmt: skip
    return {"token": wire, "history": [], "children": []}


def written(path: Path, entries: list[dict[str, Any]]) -> list[int]:
    """Write the entries as an export file; the file position after each line."""
    ends, data = [], b""
    for item in entries:
        data += entry_line(item)
        ends.append(len(data))
    path.write_bytes(data)
    return ends


def test_a_page_holds_at_most_a_thousand_entries(tmp_path: Path) -> None:
    file = tmp_path / "many.jsonl"
    entries = [entry(f"T-{n}") for n in range(2500)]
    ends = written(file, entries)
    found = list(pages(file))
    assert [len(page) for page, _, _ in found] == [1000, 1000, 500]
    assert [position for _, position, _ in found] == [ends[999], ends[1999], ends[2499]]
    assert [last for _, _, last in found] == [1000, 2000, 2500]
    assert [e for page, _, _ in found for e in page] == entries


def test_a_page_holds_at_most_page_bytes(tmp_path: Path) -> None:
    file = tmp_path / "big.jsonl"
    entries = [entry(f"T-{n}", "x" * 300_000) for n in range(5)]
    written(file, entries)
    sizes = [len(entry_line(e)) for e in entries]
    assert 3 * sizes[0] <= PAGE_BYTES < 4 * sizes[0]
    assert [(len(page), last) for page, _, last in pages(file)] == [(3, 3), (2, 5)]


def test_an_entry_larger_than_a_request_is_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    file = tmp_path / "huge.jsonl"
    written(file, [entry("A"), entry("B", "x" * PAGE_BYTES)])
    found = pages(file)
    with pytest.raises(StateousError) as caught:
        next(found)
    assert caught.value.message == (
        f"line 2 of {file} is larger than a request to the control plane may be; import it "
        "with --db URL"
    )


def test_a_bad_line_is_named_before_its_page_is_sent(tmp_path: Path) -> None:
    file = tmp_path / "bad.jsonl"
    file.write_bytes(entry_line(entry("A")) + json.dumps(entry("B")["token"]).encode() + b"\n")
    with pytest.raises(StateousError) as caught:
        list(pages(file))
    assert caught.value.message == (
        f"line 2 of {file} is not an export entry: an export entry is an object with 'token', "
        "'history' and 'children'"
    )
