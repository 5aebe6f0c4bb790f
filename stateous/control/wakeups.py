"""In-process wake-ups for long-poll claims, and the hand-off of queued tasks.

A claim that waits holds no transaction and no lock: it remembers the `generation` it saw, runs
its claim transaction, and if that found nothing it sleeps until the generation moves on (a
transaction that may have queued a task committed), its wait ends, or the control plane shuts
down. Reading the generation *before* the claim's transaction means a task queued between that
transaction and the sleep is never missed: the sleep then returns at once.

The hand-off: a sleeping claim leaves its claim operation here (it is *parked*). A lane that is
about to run a shared transaction with an operation that may queue a task (`QUEUING_CALLS`)
takes every parked claim and runs it after the group's own operations, in the same transaction
(each claim is an operation of its own there, applied in the order taken). A task
that a report or a start queues is so claimed by a waiting supervisor in the transaction that
queued it: one commit, no wake-up of the event loop, no second transaction. The claim is
answered after that commit, as every operation is. A parked claim that found nothing sleeps on.

Within one process, a commit that may have queued a task moves the generation on and wakes every
waiting claim whose claim did not run in it (the lane calls `committed`, before any answer of
the group is given). Across processes (replicas on one Postgres database), the
database sends `NOTIFY stateous_queued, '<state>'` with such a commit, and each control plane's
listener (stateous.control.listener) wakes only its claims waiting for that state.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

from stateous.control.store.group import Op, Outcome

__all__ = ["QUEUING_CALLS", "Waiter", "Wakeups"]

#: The engine calls whose transaction can queue a task or make a queued one claimable: a start,
#: a fire, a report, a resume (a paused token's tasks become claimable), a cancel (a parent
#: moves on when its children end), a lease that ends (a retry), a timer that fires, and an
#: operator's retry, move or migrate (each enters a state).
QUEUING_CALLS = frozenset(
    {"start", "fire", "report", "resume", "cancel", "lease expiry", "timer", "retry", "move",
     "migrate"}
)  # fmt: skip


class Waiter:
    """A waiting claim: its event loop, the future that wakes it, the state names it waits for,
    and its parked claim operation (None: it only waits to be woken)."""

    __slots__ = ("future", "loop", "op", "seen", "states", "taken")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        states: frozenset[str] | None,
        op: Op | None,
        seen: int,
    ) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()
        self.states = states
        self.op = op
        #: The generation its claim has seen: when it slept, then when a lane took its claim
        #: (and past that lane's own commit, when no other commit came between).
        self.seen = seen
        self.taken = False  # a lane runs (or ran) its claim operation

    def wake(self) -> None:
        """Settle its future from any thread."""
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits there now
            self.loop.call_soon_threadsafe(_settle, self.future)


class Wakeups:
    """Wakes waiting claims after a commit that may have queued a task, and hands the parked
    ones to the lanes; thread-safe.

    `join`, `committed` and `notify` run in the lanes' (or the listener's) threads; the waiting
    claims sleep on the event loop.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._closed = False
        self._waiters: set[Waiter] = set()
        self._parked: dict[Waiter, None] = {}  # not taken yet, in the order they parked
        self._running: dict[int, Waiter] = {}  # id(op) -> its waiter, while a lane runs it

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

    # --- the lanes' side (stateous.control.store.group.Companion) ---------------------------

    def join(self, group: Sequence[Op]) -> list[Op]:
        """The parked claims to run after `group`, in its transaction: every one when the group
        may queue a task, else none. Each is taken: answered by its operation's outcome."""
        if not self._parked or not any(op.call in QUEUING_CALLS for op in group):
            return []
        with self._lock:
            taken = list(self._parked)
            self._parked.clear()
            for waiter in taken:
                waiter.taken = True
                waiter.seen = self._generation
                self._waiters.discard(waiter)
                self._running[id(waiter.op)] = waiter
        ops = []
        for waiter in taken:
            assert waiter.op is not None  # only claims with an operation are parked
            waiter.op.future.add_done_callback(partial(_wake_on_answer, waiter))
            ops.append(waiter.op)
        return ops

    def committed(self, group: Sequence[Op], outcomes: Sequence[Outcome]) -> None:
        """After a group's commit (or its failure), before its answers: move the generation on
        and wake the waiting claims when one of its operations may have queued a task."""
        queued = any(
            ok and op.call in QUEUING_CALLS for op, (ok, _) in zip(group, outcomes, strict=True)
        )
        with self._lock:
            ran = [w for op in group if (w := self._running.pop(id(op), None)) is not None]
            if not queued:
                return
            for waiter in ran:
                # Its claim ran after this group's operations: it has seen what they queued,
                # unless another commit moved the generation on since it was taken.
                if waiter.seen == self._generation:
                    waiter.seen += 1
        self.notify()

    # --- the notifications ------------------------------------------------------------------

    def notify(self, state: str | None = None) -> None:
        """Wake the claims waiting for `state` (a task's own state name), or every one (None);
        from any thread. A claim that a lane took is answered by its operation instead."""
        with self._lock:
            self._generation += 1
            woken = [
                w for w in self._waiters if state is None or w.states is None or state in w.states
            ]
            self._waiters.difference_update(woken)
            for waiter in woken:
                self._parked.pop(waiter, None)
        for waiter in woken:
            waiter.wake()

    def close(self) -> None:
        """Release every waiting claim now and let none wait again (shutdown, takeover)."""
        self._closed = True
        self.notify()

    async def wait(
        self,
        seen: int,
        timeout: float,
        states: frozenset[str] | None = None,
        park: Op | None = None,
    ) -> Waiter | None:
        """Sleep until the generation moves past `seen`, `timeout` seconds pass, or `close()`.

        `states`: the task state names the claim serves (a notification for another state does
        not wake it); None: any. `park`: the claim's operation, left for a lane to run in a
        transaction that may queue a task. Answers the waiter when a lane took it (its
        operation's future holds the claim's outcome, or soon will), else None.
        """
        if timeout <= 0:
            return None
        waiter = Waiter(asyncio.get_running_loop(), states, park, seen)
        with self._lock:
            if self._closed or self._generation != seen:
                return None
            self._waiters.add(waiter)
            if park is not None:
                self._parked[waiter] = None
        try:
            await asyncio.wait_for(waiter.future, timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                self._waiters.discard(waiter)
                self._parked.pop(waiter, None)
                taken = waiter.taken
        return waiter if taken else None


def _wake_on_answer(waiter: Waiter, _answered: Future[Any]) -> None:
    waiter.wake()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
