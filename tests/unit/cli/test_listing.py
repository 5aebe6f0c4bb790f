"""The cut line of the listings and their plain columns (stateous/cli/listing.py)."""

from __future__ import annotations

from stateous.cli.listing import aligned, cut_line, more_than


def test_a_short_page_asks_no_count() -> None:
    asked: list[int] = []

    def count() -> int:
        asked.append(1)
        return 500

    assert more_than(99, 100, count) == 0
    assert asked == []


def test_a_full_page_says_what_the_count_leaves() -> None:
    assert more_than(100, 100, lambda: 202) == 102
    assert more_than(100, 100, lambda: 100) == 0
    # Rows gone between the page and the count: nothing is said.
    assert more_than(100, 100, lambda: 98) == 0


def test_the_cut_line() -> None:
    assert cut_line(102, 100) == "… and 102 more (--limit N to see more)"
    assert cut_line(1500, 999, at_least=True) == (
        "… and at least 1,500 more (--limit N to see more)"
    )
    assert cut_line(2345, 1000) == "… and 2,345 more (1,000 is the most a listing shows)"


def test_columns_left_then_right() -> None:
    assert aligned(
        ["state", "active", "paused"], [["coding", "1,234", "5"], ["qa", "0", "12"]], right=1
    ) == [
        "state   active  paused",
        "coding   1,234       5",
        "qa           0      12",
    ]
    assert aligned(["job", "by"], [["12", "-"]]) == ["job  by", "12   -"]
