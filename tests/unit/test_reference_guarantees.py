"""Every test file that docs/reference/guarantees.md names as pinning a guarantee exists, and
every section of the page names at least one."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "guarantees.md"
#: A test file's path as the page writes it: `tests/.../test_x.py`.
TEST_PATH = re.compile(r"`(tests/[A-Za-z0-9_/]+\.py)`")


def named_paths(text: str) -> list[str]:
    return TEST_PATH.findall(text)


def test_every_named_test_file_exists() -> None:
    paths = named_paths(PAGE.read_text(encoding="utf-8"))
    assert len(paths) >= 20  # the search finds the paths at all
    missing = sorted({path for path in paths if not (ROOT / path).is_file()})
    assert missing == []


def test_every_guarantee_names_its_tests() -> None:
    text = PAGE.read_text(encoding="utf-8")
    sections = text.split("\n## ")[1:]
    untested = [
        section.splitlines()[0]
        for section in sections
        if not section.startswith("What is not guaranteed") and not named_paths(section)
    ]
    assert untested == []
