"""The threads of `def` routines: one routine at a time in each, kept for the next one."""

from __future__ import annotations

import threading
import time

from stateous.supervisor.threads import RoutineThreads


def run_and_wait(threads: RoutineThreads, name: str, block: threading.Event | None = None) -> str:
    """Run a routine that records its thread's name (after `block`, if given); answer it."""
    seen: list[str] = []
    done = threading.Event()

    def work() -> None:
        if block is not None:
            block.wait(5)
        seen.append(threading.current_thread().name)
        done.set()

    threads.run(name, work)
    if block is None:
        assert done.wait(5)
        return seen[0]
    return ""


def test_a_thread_is_kept_for_the_next_routine() -> None:
    threads = RoutineThreads()
    assert run_and_wait(threads, "routine-1") == "routine-1"
    time.sleep(0.05)  # it goes back to wait
    assert run_and_wait(threads, "routine-2") == "routine-2"
    assert threads.started == 1


def test_a_routine_that_runs_gets_no_company() -> None:
    threads = RoutineThreads()
    release = threading.Event()
    run_and_wait(threads, "routine-1", block=release)  # still running
    assert run_and_wait(threads, "routine-2") == "routine-2"
    assert threads.started == 2
    release.set()


def test_an_idle_thread_ends() -> None:
    threads = RoutineThreads(idle_seconds=0.05)
    run_and_wait(threads, "routine-idle")  # a name no other test's threads take
    deadline = time.monotonic() + 5
    while any(t.name == "routine-idle" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the idle thread did not end"
        time.sleep(0.02)
    assert run_and_wait(threads, "routine-2") == "routine-2"
    assert threads.started == 2
