"""The docs are pages a reader finishes and can find: each at most 300 lines, each listed in
docs/README.md, and every relative link in the docs, README.md and CONTRIBUTING.md leads to a page
that exists and, with an anchor, to a heading of it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
MOST_LINES = 300

#: Pages still being cut below 300 lines by other changes in progress; the rule applies to them
#: once they are. Remove each name as its page shrinks.
NOT_YET: tuple[str, ...] = ()

#: Reference pages the index already lists and that are being written; a link to one of them is
#: allowed to lead nowhere until it exists. Remove each name as its page lands.
COMING: tuple[str, ...] = ()

#: `](target.md)` or `](target.md#anchor)`, and `](#anchor)` within a page; web addresses aside.
LINK = re.compile(r"\]\((?!https?://)([^)\s#]*\.md)?(?:#([^)\s]*))?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def name(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def prose(path: Path) -> Iterator[str]:
    """The lines of a Markdown file outside its fenced code blocks."""
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces become `-`."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor, with GitHub's `-1`, `-2` for a repeated one."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose(path):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading is None:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> Iterator[tuple[str | None, str | None]]:
    for line in prose(path):
        for target, anchor in LINK.findall(line):
            if target or anchor:
                yield (target or None), (anchor or None)


def linked_files() -> list[Path]:
    return [*pages(), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]


def test_the_search_finds_pages_and_links() -> None:
    assert len(pages()) >= 25
    assert ("reference/authoring.md", None) in set(links(INDEX))
    assert slug("The store's modules and the dialect") == "the-stores-modules-and-the-dialect"
    assert slug("`stateous.yaml`") == "stateousyaml"
    assert slug("Versions: what serving several costs") == "versions-what-serving-several-costs"


@pytest.mark.parametrize("page", pages(), ids=name)
def test_a_page_is_at_most_300_lines(page: Path) -> None:
    if name(page) in NOT_YET:
        pytest.skip(f"{name(page)} is still being cut below {MOST_LINES} lines")
    count = len(page.read_text(encoding="utf-8").splitlines())
    assert count <= MOST_LINES, f"{name(page)} has {count} lines"


def test_every_page_is_in_the_index() -> None:
    listed = {(INDEX.parent / target).resolve() for target, _ in links(INDEX) if target}
    missing = [name(page) for page in pages() if page != INDEX and page.resolve() not in listed]
    assert missing == []


def test_the_not_yet_pages_exist() -> None:
    """A name left in NOT_YET after its page was renamed would hide nothing; keep the list true."""
    assert [page for page in NOT_YET if not (DOCS / page).is_file()] == []


@pytest.mark.parametrize("path", linked_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_to_a_page_and_a_heading(path: Path) -> None:
    broken: list[str] = []
    for target, anchor in links(path):
        goal = (path.parent / target).resolve() if target else path
        if not goal.is_file():
            coming = goal.is_relative_to(DOCS) and goal.relative_to(DOCS).as_posix() in COMING
            if not coming:
                broken.append(f"{target}: no such file")
            continue
        if anchor is not None and anchor not in anchors(goal):
            broken.append(f"{target or ''}#{anchor}: no such heading")
    assert broken == []
