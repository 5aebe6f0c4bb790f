"""The repository stands on its own: no tracked file points at a specification outside it.

Whoever clones the repository gets its code, tests and docs, and nothing else, so a comment,
docstring, message or page says what the rule is (or links a page under `docs/`) instead of
naming a section of a document the reader does not have.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The word, an optional plural `s`, a space, then a section number or sign. Built from pieces
#: so that this file, once it is checked, does not match itself.
POINTER = re.compile("spec" + r"s? (?:\d|§)", re.IGNORECASE)

#: Paths not checked (a folder ends with `/`): none now that every file is clean. An entry
#: here would exempt a path while its pointers are being rewritten.
NOT_YET: tuple[str, ...] = ()

#: How a rendered console snapshot (SVG) writes a space.
_SVG_SPACES = ("&#160;", "\u00a0")


def tracked_files() -> list[str]:
    """Every path git tracks in the repository, in git's order."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout, so no list of tracked files: {exc}")
    return [path for path in listed.decode("utf-8").split("\0") if path]


def checked(path: str) -> bool:
    """Whether `path` is checked now: outside NOT_YET."""
    return not any(
        path.startswith(entry) if entry.endswith("/") else path == entry for entry in NOT_YET
    )


def text_of(path: Path) -> str | None:
    """The file's text with an SVG's spaces as plain spaces; None for a symlink (the
    `stateous/tui` link, whose files are checked under `tui/`) or a file that is not UTF-8
    text (an image)."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None
    for space in _SVG_SPACES:
        text = text.replace(space, " ")
    return text


def pointers(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line of `text` that holds a pointer."""
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if POINTER.search(line)
    ]


def test_the_pattern_finds_pointers_and_leaves_other_words() -> None:
    word = "spec"
    found = [
        f"see {word} 80",
        f"({word} 90 §5)",
        f"the {word}s 20 and 70",
        f"{word} §3",
        f"{word.title()} 9",
    ]
    assert [bool(POINTER.search(line)) for line in found] == [True] * 5
    kept = ["the OpenAPI spec objects", "a spec: 3 of them", f"{word}ial 80", f"{word}80"]
    assert [bool(POINTER.search(line)) for line in kept] == [False] * 4


def test_no_tracked_file_points_at_an_outside_specification() -> None:
    found: list[str] = []
    paths = [path for path in tracked_files() if checked(path)]
    for path in paths:
        text = text_of(ROOT / path)
        if text is not None:
            found += [f"{path}:{number}: {line}" for number, line in pointers(text)]
    assert "stateous/cli/main.py" in paths  # the list is the repository's, not an empty one
    assert not found, (
        f"{len(found)} line(s) point at a specification outside the repository; say what the"
        " rule is instead, or link a page under docs/:\n" + "\n".join(found)
    )
