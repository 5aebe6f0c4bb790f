"""The threads that run `def` routines: kept between routines, so a task does not start one.

Each routine still has a thread to itself for as long as it runs (a routine may block, sleep, or
never return); a thread whose routine returned waits for the next one, and ends after a minute
without work. Starting a thread costs a round trip to the new thread before `start` returns:
at hundreds of tasks a second that was a tenth of the supervisor's CPU.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

__all__ = ["RoutineThreads"]

#: How long a thread without a routine waits for the next before it ends.
IDLE_SECONDS = 60.0


class RoutineThreads:
    """Runs each callable in a thread of its own while it runs, reusing idle threads."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[tuple[str, Callable[[], None]]]] = []
        self.started = 0  # threads started so far (tests)

    def run(self, name: str, work: Callable[[], None]) -> None:
        """Run `work` in an idle thread, or in a new daemon thread when none is idle; the
        thread takes `name` while it runs it. `work` must not raise (it catches its own)."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is not None:
            inbox.put((name, work))
            return
        inbox = queue.SimpleQueue()
        inbox.put((name, work))
        thread = threading.Thread(target=self._serve, args=(inbox,), name=name, daemon=True)
        self.started += 1
        thread.start()

    def _serve(self, inbox: queue.SimpleQueue[tuple[str, Callable[[], None]]]) -> None:
        current = threading.current_thread()
        while True:
            try:
                job = inbox.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:  # no one handed it work meanwhile: end
                        self._idle.remove(inbox)
                        return
                continue  # work was put in as it timed out: take it
            current.name, work = job
            work()
            with self._lock:
                self._idle.append(inbox)
