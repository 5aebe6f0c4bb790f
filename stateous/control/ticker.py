"""The clock of `stateous serve`: one tick per interval.

A tick (1) checks and renews this control plane's hold on the database, (2) ends expired
leases, (3) fires due timers and (4) starts the tokens of due schedule slots.
Steps 2-4 are one short read each, then one transaction per lease, per timer and per slot, so
the clock never holds a lock between ticks (nor across items).
Ticks never overlap: the next one starts only after the last one ended.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import Connection

from stateous.control import tracing
from stateous.control.clock import Clock
from stateous.control.engine.lease import expire_lease, expired_leases
from stateous.control.engine.schedules import MOST_STEPS, due_schedules, run_step
from stateous.control.engine.timers import due_timers, fire_timer
from stateous.control.errors import DatabaseBusy, NotServing
from stateous.control.plane import Plane
from stateous.model.errors import StateousError

log = logging.getLogger("stateous.serve")

TAKEN = (
    "another control plane took this database; this control plane does no more work; "
    "trying again does not help: stop this server"
)


class Renewal(Protocol):
    """The hold on the database, as the clock uses it."""

    def renew(self) -> bool:
        """Check and renew the hold; False when another control plane took the database."""
        ...


@dataclass(frozen=True)
class TickResult:
    """What one tick did: leases ended, timers fired, items that failed; `lost` the hold."""

    leases: int = 0
    timers: int = 0
    failures: int = 0
    lost: bool = False
    skipped: bool = False
    #: Schedules that did a step.
    schedules: int = 0


def one_line(exc: BaseException) -> str:
    """An error as one line of a log record (its sentence, else its class name)."""
    if isinstance(exc, StateousError):
        text = exc.message
    else:
        # A driver error's own sentence, without SQLAlchemy's statement and background lines.
        orig = getattr(exc, "orig", None)
        text = str(orig if orig is not None else exc).strip()
        text = text.splitlines()[0] if text else ""
    return " ".join(text.split()) or type(exc).__name__


@dataclass
class Ticker:
    """The clock of one control plane: call `tick()` (tests) or `await run(stop)` (serve)."""

    plane: Plane
    hold: Renewal | None = None
    interval: float = 1.0
    #: Whether this control plane runs the clock (a replica: only once it holds the
    #: database); None: always.
    runs_clock: Callable[[], bool] | None = None
    #: A replica's tick before it holds: follow the holder's current version.
    follow: Callable[[], None] | None = None

    @property
    def interval_text(self) -> str:
        """The interval as the log lines print it (`1.0`)."""
        return repr(float(self.interval))

    def tick(self) -> TickResult:
        """One tick: the hold, lease expiry, timers, then schedules; never raises."""
        # Asked before the hold: a replica that takes the hold in this tick runs the clock from
        # its next one.
        runs = self.runs_clock is None or self.runs_clock()
        if self.hold is not None:
            try:
                if not self.hold.renew():
                    return self._lost()
            except Exception as exc:  # the database does not answer: not a loss, skip this tick
                log.warning(
                    "cannot renew this control plane's hold on the database (%s); "
                    "trying again in %s seconds",
                    one_line(exc),
                    self.interval_text,
                )
                return TickResult(skipped=True)
        if not self.plane.serving:
            return TickResult(lost=True)
        if not runs:
            self._follow()
            return TickResult(skipped=True)
        leases, failed_leases, gave_up = self._each(expired_leases, self._expire)
        if gave_up:
            return TickResult(leases, 0, failed_leases)
        timers, failed_timers, gave_up = self._each(due_timers, self._fire)
        failed = failed_leases + failed_timers
        if gave_up:
            return TickResult(leases, timers, failed)
        scheduled, failed_schedules, _ = self._each(due_schedules, self._schedule)
        return TickResult(leases, timers, failed + failed_schedules, schedules=scheduled)

    def _follow(self) -> None:
        if self.follow is None:
            return
        try:
            self.follow()
        except Exception as exc:  # the next tick tries again
            log.warning("cannot read the holder's current version (%s)", one_line(exc))

    def _lost(self) -> TickResult:
        log.error(TAKEN)
        self.plane.serving = False
        return TickResult(lost=True)

    def _each[I](
        self, read: Callable[[Connection, Clock], list[I]], work: Callable[[I], bool]
    ) -> tuple[int, int, bool]:
        """The one read, then each item in its own transaction.

        Answers (done, failed, gave up): the tick gives up when the database or the hold is
        gone, since the rest of it would fail the same way.
        """
        clock = self.plane.clock
        try:
            ids = self.plane.run("clock", lambda conn: read(conn, clock))
        except Exception as exc:
            self._failed(exc)
            return 0, 1, True
        done = failed = 0
        for item in ids:
            try:
                done += 1 if work(item) else 0
            except (DatabaseBusy, NotServing) as exc:
                self._failed(exc)
                return done, failed + 1, True
            except Exception as exc:  # one bad item must not stop the others
                self._failed(exc)
                failed += 1
        return done, failed, False

    def _failed(self, exc: BaseException) -> None:
        log.error(
            "the clock's tick failed (%s); it tries again in %s seconds",
            one_line(exc),
            self.interval_text,
        )
        log.debug("the clock's tick failed", exc_info=exc)

    def _expire(self, task_id: int) -> bool:
        plane = self.plane
        return plane.run(
            "lease expiry",
            lambda conn: expire_lease(conn, plane.clock, plane.config, task_id),
        )

    def _fire(self, timer_id: int) -> bool:
        plane = self.plane
        started, timer = tracing.now(), tracing.timer_token(plane.store, timer_id)
        fired = plane.run(
            "timer", lambda conn: fire_timer(conn, plane.clock, plane.config, timer_id)
        )
        tracing.timer_fired(plane.store, started, timer_id, timer if fired else None)
        return fired

    def _schedule(self, name: str) -> bool:
        """The steps of one due schedule, each its own transaction, until it is not due (or
        `MOST_STEPS` of them: the next tick goes on)."""
        plane = self.plane
        for _ in range(MOST_STEPS):
            step = plane.run(
                "schedule", lambda conn: run_step(conn, plane.clock, plane.config, name)
            )
            if step.refused is not None:
                log.warning(
                    "the schedule %r did not start the token %r (%s); its slot is skipped",
                    name,
                    step.refused_token,
                    step.refused.message,
                )
            if not step.more:
                break
        return True

    async def run(self, stop: asyncio.Event) -> bool:
        """Tick every interval (the first one interval after start) until `stop` is set.

        Answers False when the hold was lost (the server must stop, exit 1), True on a stop.
        A tick runs in a worker thread, so the event loop keeps serving requests meanwhile;
        a stop waits for the tick in progress to finish.
        """
        next_at = time.monotonic() + self.interval
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=max(0.0, next_at - time.monotonic()))
                return True
            except TimeoutError:
                pass
            result = await asyncio.to_thread(self.tick)
            if result.lost:
                return False
            # Keep the rhythm; after a long tick, wait at least a little before the next.
            next_at = max(next_at + self.interval, time.monotonic() + self.interval / 10)
        return True
