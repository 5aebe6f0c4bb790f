"""In-process wake-ups for long-poll claims (spec 70 §2).

A claim that waits holds no transaction and no lock: it remembers the `generation` it saw, runs
its claim transaction, and if that found nothing it sleeps until the generation moves on (a
transaction that may have queued a task committed), its wait ends, or the control plane shuts
down. Reading the generation *before* the claim's transaction means a task queued between that
transaction and the sleep is never missed: the sleep then returns at once.

Within one process, a commit that may have queued a task wakes every waiting claim. Across
processes (spec 85 §2: replicas on one Postgres database), the database sends
`NOTIFY stateous_queued, '<state>'` with such a commit, and each control plane's listener
(stateous.control.listener) wakes only its claims waiting for that state.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

__all__ = ["QUEUING_CALLS", "Wakeups"]

#: The engine calls whose transaction can queue a task or make a queued one claimable: a start,
#: a fire, a report, a resume (a paused token's tasks become claimable), a cancel (a parent
#: moves on when its children end), a lease that ends (a retry), a timer that fires, and an
#: operator's retry or move (spec 80 §3: each enters a state).
QUEUING_CALLS = frozenset(
    {"start", "fire", "report", "resume", "cancel", "lease expiry", "timer", "retry", "move"}
)


class Wakeups:
    """Wakes waiting claims after a commit that may have queued a task; thread-safe.

    `notify()` runs in the worker thread that committed; waiters sleep on the event loop.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._closed = False
        self._waiters: set[_Waiter] = set()

    @property
    def generation(self) -> int:
        """A number that grows with every notification; read it before a claim's transaction."""
        return self._generation

    @property
    def closed(self) -> bool:
        """Whether the control plane is shutting down: claims no longer wait."""
        return self._closed

    @property
    def waiting(self) -> int:
        """How many claims wait now."""
        return len(self._waiters)

    def after_commit(self, call: str) -> None:
        """Notify when the committed transaction of `call` may have queued a task."""
        if call in QUEUING_CALLS:
            self.notify()

    def notify(self, state: str | None = None) -> None:
        """Wake the claims waiting for `state` (a task's own state name), or every one (None);
        from any thread."""
        with self._lock:
            self._generation += 1
            woken = {w for w in self._waiters if state is None or w[2] is None or state in w[2]}
            self._waiters -= woken
        for loop, future, _states in woken:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits there now
                loop.call_soon_threadsafe(_settle, future)

    def close(self) -> None:
        """Release every waiting claim now and let none wait again (shutdown, takeover)."""
        self._closed = True
        self.notify()

    async def wait(self, seen: int, timeout: float, states: frozenset[str] | None = None) -> None:
        """Sleep until the generation moves past `seen`, `timeout` seconds pass, or `close()`.

        `states`: the task state names the claim serves (a notification for another state does
        not wake it); None: any.
        """
        if timeout <= 0:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future, states)
        with self._lock:
            if self._closed or self._generation != seen:
                return
            self._waiters.add(entry)
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                self._waiters.discard(entry)


#: A waiting claim: its event loop, the future that wakes it, the state names it waits for.
_Waiter = tuple[asyncio.AbstractEventLoop, asyncio.Future[None], frozenset[str] | None]


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
