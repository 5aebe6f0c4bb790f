"""Named crash points for durability tests (as DBOS's `_debug_trigger.py`): nothing, unless armed."""

from __future__ import annotations

import os
import signal

from stateous.model.environment import value

__all__ = ["debug_point"]


def debug_point(name: str) -> None:
    """Kill this process at once (SIGKILL, as a power cut would) when `STATEOUS_DEBUG_POINT`
    names `name`, for example `after_outbox_commit:note`; else do nothing.

    The variable is read at each point, so a test arms a real daemon through its environment.
    """
    if value("debug_point") == name:
        os.kill(os.getpid(), signal.SIGKILL)
