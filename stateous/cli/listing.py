"""What the listing commands share: their page's size, `--limit` and `--after`, the lines that
say a listing is cut and where its next page starts, and plain columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from stateous.cli.params import WholeNumber
from stateous.client.pages import Page

DEFAULT = 100
"""The page of a listing when `--limit` is not given: the control plane's default."""
MOST = 1000
"""The most any listing route answers at once."""


def limit_option(rows: str, when: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--limit N` of a listing of `rows`, 1 to `MOST` (None when not given: `DEFAULT`); `when`
    says when it applies (`"With no ID"`)."""
    most = f"at most N {rows} (1 to {MOST}; default {DEFAULT})."
    return click.option(
        "--limit",
        "limit",
        metavar="N",
        type=WholeNumber(1, MOST),
        default=None,
        help=f"{when}: list {most}" if when else most[0].upper() + most[1:],
    )


def after_option(rows: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--after CURSOR`: the page of `rows` after the one that printed `next page: --after
    CURSOR` (on stderr, so the rows of the pages can be written one after the other)."""
    return click.option(
        "--after",
        "after",
        metavar="CURSOR",
        default=None,
        help=f"List the {rows} after a page that printed 'next page: --after CURSOR'.",
    )


def echo_next(page: Page) -> None:
    """On stderr, where the next page starts, when one follows `page`."""
    if page.next is not None:
        click.echo(f"next page: --after {page.next}", err=True)


def more_than(page: int, limit: int, count: Callable[[], int]) -> int:
    """How many rows the control plane had beyond the `limit` shown, 0 when nothing was cut.

    The listing routes tell no total: a page shorter than `limit` is all there is, and only for
    a full one is `count()`, the control plane's total, asked (one more request)."""
    if page < limit:
        return 0
    return max(count() - limit, 0)


def cut_line(more: int, limit: int, *, at_least: bool = False) -> str:
    """`… and 102 more (--limit N to see more)`."""
    hint = "--limit N to see more" if limit < MOST else f"{MOST:,} is the most a listing shows"
    least = "at least " if at_least else ""
    return f"… and {least}{more:,} more ({hint})"


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], right: int = 0) -> list[str]:
    """`header` and `rows` as lines of columns two spaces apart; the columns from index `right`
    on are aligned right (numbers) when `right` > 0. Trailing spaces are cut."""
    table = [list(header), *(list(row) for row in rows)]
    widths = [max(len(row[n]) for row in table) for n in range(len(header))]
    lines = []
    for row in table:
        cells = [
            cell.rjust(width) if 0 < right <= n else cell.ljust(width)
            for n, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return lines
