"""Helpers of the console's pilot tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot


async def settle(pilot: Pilot[Any]) -> None:
    """Let every worker finish and the screen redraw (not while a worker waits on a modal)."""
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Pause until `condition` holds."""
    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError("the condition did not come true in time")


def plain(row: list[Any]) -> list[str]:
    """The text of each cell of a row."""
    cells = [cell() if callable(cell) else cell for cell in row]
    return [str(getattr(cell, "plain", cell)) for cell in cells]


def notes(pilot: Pilot[Any]) -> list[str]:
    """The messages of the notifications shown so far."""
    return [n.message for n in pilot.app._notifications]
