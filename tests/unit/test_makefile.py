"""The Makefile names only paths the repository has, and `make help` lists each of its targets."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
#: A word with a slash or a file's extension; not one built of make's or the shell's variables
#: or patterns (`$(VENV)/bin/python`, `versions/3.1[2-9]*`), nor a flag (`-p no:cacheprovider`).
PATH_WORD = re.compile(
    r"(?<![\w$().*/\[>-])((?:[\w.-]+/)+[\w.-]*|[\w-]+\.(?:py|md|toml|json))(?![\w$(*\[/])"
)
#: The folders a recipe runs a tool on (`ruff format --check stateous tui tests bench`).
FOLDERS = re.compile(r"^\t.*(?:ruff format --check|ruff check|compileall -q) ([\w -]+)$", re.M)

#: What a target writes rather than reads (`make bench` writes its results).
WRITTEN = {"bench/results.json"}


def named_paths(makefile: str) -> set[str]:
    """The files and folders `makefile` names, as written."""
    paths = set(PATH_WORD.findall(makefile))
    for found in FOLDERS.finditer(makefile):
        paths.update(found[1].split())
    return paths


def test_every_path_the_makefile_names_is_in_the_repository() -> None:
    paths = named_paths(MAKEFILE)
    assert {"bench/run_all.py", "pyproject.toml", "CONTRIBUTING.md", "tests"} <= paths
    missing = sorted(p for p in paths - WRITTEN if not (ROOT / p).exists())
    assert missing == []


def test_a_path_that_is_not_there_is_found() -> None:
    text = "imports: $(STAMP) ## the import rules of DEVELOPERS.md\n\t@$(VENV)/bin/lint-imports\n"
    assert named_paths(text) == {"DEVELOPERS.md"}


def test_help_lists_every_phony_target() -> None:
    phony = re.search(r"^\.PHONY: (.+)$", MAKEFILE, re.M)
    assert phony is not None
    helped = set(re.findall(r"^([a-z-]+):.*## ", MAKEFILE, re.M))
    assert set(phony[1].split()) == helped
    assert {"test", "test-long"} <= helped
