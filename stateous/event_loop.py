"""The event loop of the long-running commands (`serve`, `supervise`): uvloop's where installed.

uvloop runs the loop, its sockets and its cross-thread wake-ups in C: for `serve` faster HTTP,
for `supervise` less CPU per claim, report and outbox hop (its loop had been asyncio's own,
whose selector and socket writes were a fifth of an idle supervisor's time under py-spy).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["loop_factory"]


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed; None (asyncio's own) otherwise."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop
