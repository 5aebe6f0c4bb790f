"""The grant runner: runs the routine of each grant and reports its outcome.

An `async def` routine runs on the event loop, a `def` routine in a daemon thread of its own
while it runs (`RoutineThreads` keeps the threads between routines);
the grant's notes and memory writes go to the outbox, then to the sender, before its report.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stateous.supervisor import tracing
from stateous.supervisor.grant import Grant, grant_from
from stateous.supervisor.outbox import MessageKind, OutboxError
from stateous.supervisor.outcome import error_text, failed, outcome_of
from stateous.supervisor.routine import Context
from stateous.supervisor.sender import Sender
from stateous.supervisor.shared import Shared
from stateous.supervisor.threads import RoutineThreads

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["GrantRunner"]

log = logging.getLogger("stateous.supervisor")


class _Sink:
    """Where the routine of one grant writes its notes and memory: the outbox, then a sender."""

    def __init__(self, shared: Shared, grant: Grant) -> None:
        self._shared = shared
        self._grant = grant

    def note(self, text: str) -> None:
        self._put("note", {"text": text})

    def memory(self, key: str, value: Any) -> None:
        self._put("memory", {"key": key, "value": value})

    def _put(self, kind: MessageKind, body: dict[str, Any]) -> None:
        grant, shared = self._grant, self._shared
        if grant.lost or shared.forced:
            return  # the attempt is over: the control plane would refuse the message
        try:
            message = shared.outbox.add(grant.task, grant.attempt, grant.token, kind, body)
        except OutboxError as exc:
            log.error(
                "task %s of %s: cannot write the %s to the outbox: %s",
                grant.task,
                grant.token,
                kind,
                exc,
            )
            raise OutboxError(f"cannot write the {kind} to the outbox: {exc}") from None
        shared.enqueue(grant, message)


class GrantRunner:
    """Takes the grants of claims and runs each to its report."""

    def __init__(self, shared: Shared, sender: Sender) -> None:
        self.shared = shared
        self.sender = sender

    def take(self, body: object) -> None:
        """Start the routine of the grant that a claim answered."""
        shared = self.shared
        try:
            grant = grant_from(body)
        except ValueError as exc:
            log.warning("the control plane refused a claim: the claimed task is not valid: %s", exc)
            return
        # Per task, so at DEBUG: the tally's line a minute says it at INFO.
        log.debug(
            "task %s: %s of %s, attempt %s", grant.task, grant.state, grant.token, grant.attempt
        )
        if shared.forced:
            log.warning(
                "task %s of %s: stopping now, so its routine does not run", grant.task, grant.token
            )
            return
        old = shared.grants.get(grant.task)
        if old is not None:
            shared.lose(old)
        shared.grants[grant.task] = grant
        shared.spawn(self.run(grant))

    async def run(self, grant: Grant) -> None:
        """Run one grant: its routine, then its report behind its messages."""
        shared = self.shared
        try:
            outcome = await self._run_routine(grant)
            if outcome is not None and not grant.lost and not shared.forced:
                grant.reporting = True
                await self.sender.report(grant, outcome)
            grant.queued.set()
            await grant.drained.wait()
        except Exception:
            log.exception("task %s of %s: could not finish", grant.task, grant.token)
        finally:
            grant.queued.set()
            if grant.lost:
                shared.outbox.remove_attempt(grant.task, grant.attempt)
            if shared.grants.get(grant.task) is grant:
                del shared.grants[grant.task]
            shared.wake.set()

    async def _run_routine(self, grant: Grant) -> dict[str, Any] | None:
        """The routine's outcome, or None when the grant was lost or a forced stop began; the
        routine runs inside its span when tracing is on."""
        span = tracing.routine_span(grant.claim)
        outcome: dict[str, Any] | None = None
        try:
            outcome = await self._outcome(grant, span)
        finally:
            tracing.finish(span, outcome)
        return outcome

    async def _outcome(self, grant: Grant, span: Span | None) -> dict[str, Any] | None:
        routine = self.shared.registry.routines.get(grant.state)
        if routine is None:
            return failed(f"this supervisor has no routine for {grant.state!r}", grant.attempt)
        state, function = routine
        claim = grant.claim
        ctx: Context[Any] = Context(
            token=claim["token"],
            task=claim["task"],
            visit=claim["visit"],
            attempt=claim["attempt"],
            context=claim["context"],
            memory=claim["memory"],
            entered_by=claim["entered_by"]["name"],
            sink=_Sink(self.shared, grant),
        )
        grant.running = True
        try:
            work = _start_routine(grant, function, ctx, self.shared.threads, span)
            aborted: asyncio.Future[Any] = asyncio.ensure_future(grant.abort.wait())
            done, _ = await asyncio.wait({work, aborted}, return_when=asyncio.FIRST_COMPLETED)
            aborted.cancel()
            if work not in done:
                if grant.lost:
                    log.warning(
                        "task %s of %s: the control plane took it back; cancelling its routine",
                        grant.task,
                        grant.token,
                    )
                work.cancel()
                await asyncio.wait({work})
                return None
        finally:
            grant.running = False
        ok, value = work.result()
        if not ok:
            return failed(value, grant.attempt)
        return outcome_of(value, state, ctx, grant.attempt)


def _start_routine(
    grant: Grant,
    function: Callable[..., Any],
    ctx: Context[Any],
    threads: RoutineThreads,
    span: Span | None = None,
) -> asyncio.Future[tuple[bool, Any]]:
    """Start the routine, inside `span` (the current span where it runs); its future answers
    (True, result) or (False, error text)."""
    if inspect.iscoroutinefunction(function):

        async def guarded() -> tuple[bool, Any]:
            try:
                return True, await tracing.call_async(span, function, ctx)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # SystemExit too: a routine's failure, not ours
                return False, error_text(exc)

        return asyncio.ensure_future(guarded())
    loop = asyncio.get_running_loop()
    future: asyncio.Future[tuple[bool, Any]] = loop.create_future()

    def settle(result: tuple[bool, Any]) -> None:
        if not future.done():
            future.set_result(result)

    grant.finished = finished = threading.Event()

    def in_thread() -> None:
        try:
            result: tuple[bool, Any] = (True, tracing.call(span, function, ctx))
        except BaseException as exc:
            result = (False, error_text(exc, in_thread=True))
        finally:
            finished.set()
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed: the result is ignored
                loop.call_soon_threadsafe(settle, result)

    threads.run(f"routine-{grant.task}", in_thread)
    return future
