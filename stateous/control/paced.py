"""The loop of the holder's background work beside live traffic: bulk jobs, the fill of a
search key, retention. Each step is one short piece of work in a worker thread; between steps
the loop rests, so claims and reports keep their latency."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from stateous.control.errors import NotServing
from stateous.control.ticker import one_line

log = logging.getLogger("stateous.control")


@dataclass(frozen=True)
class Pace:
    """How a background loop rests.

    After a step that did something it rests `rest` seconds, or as long as the step took when
    that is longer and `as_long_as_it_took`. After a step with nothing to do it waits `idle`
    seconds, or ends when `idle` is None. After a failed step (the database busy or gone) it
    logs `failing` and waits `after_failure` seconds before it tries again.
    """

    rest: float
    idle: float | None
    after_failure: float
    failing: str
    as_long_as_it_took: bool = True


async def run_paced(
    step: Callable[[], int],
    stop: asyncio.Event,
    pace: Pace,
    on_failure: Callable[[], None] | None = None,
) -> None:
    """Run `step` (it answers how much it did) until `stop` is set, the control plane stops
    serving, or, with no `idle`, a step has nothing left to do."""
    while not stop.is_set():
        started = time.monotonic()
        try:
            handled = await asyncio.to_thread(step)
        except NotServing:
            return
        except Exception as exc:  # the database is busy or gone: try again later
            log.error("%s (%s); trying again", pace.failing, one_line(exc))
            if on_failure is not None:
                on_failure()
            wait = pace.after_failure
        else:
            if not handled and pace.idle is None:
                return
            took = time.monotonic() - started if pace.as_long_as_it_took else 0.0
            wait = max(pace.rest, took) if handled else float(pace.idle or 0.0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=wait)
