"""The claim loop: claims tasks while slots are free, until a stop."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from stateous.supervisor.remote import Answer
from stateous.supervisor.shared import Shared, retry_delay, wait_for

__all__ = ["ClaimLoop"]

log = logging.getLogger("stateous.supervisor")

# The refusals of a control plane that does not know the `wait` or the `max`
# of a claim.
_FIELD_REFUSALS = frozenset({"invalid_body", "invalid_argument", "unknown_field"})
MAX_GRANTS = 64  # the most tasks one claim may ask for

#: How long the next claim waits for the routines of the last one's grants to queue their
#: reports: a routine that returns at once (the fast path) gets there first; a longer one does
#: not hold the claims of the free slots back for more than this.
REPORTS_FIRST = 0.005


class ClaimLoop:
    """Sends what the outbox holds from an earlier run, then claims; `take` starts each grant."""

    def __init__(
        self,
        shared: Shared,
        leftovers: Callable[[], Awaitable[None]],
        take: Callable[[object], None],
    ) -> None:
        self.shared = shared
        self._leftovers = leftovers
        self._take = take
        self._held: asyncio.Future[Answer | None] | None = None  # the long-poll claim in flight
        self._refusals = 0  # the claims refused in a row (the next one waits longer)

    async def run(self) -> None:
        """Claim until a stop begins (or a claim waiting to retry gives up at a stop)."""
        shared = self.shared
        await self._leftovers()
        request = uuid.uuid4().hex
        while not shared.stopping:
            if len(shared.grants) >= shared.settings.tasks:
                shared.wake.clear()
                await wait_for(shared.wake, 3600)
                continue
            body = self._body(request)
            waited = "wait" in body
            sent = time.monotonic()
            try:
                answer = await self._claim(body)
            except Exception:
                log.exception("a claim failed")
                await shared.idle()
                continue
            if answer is None:
                return
            request = uuid.uuid4().hex
            if answer.ok:
                self._refusals = 0
                shared.claim_answered()
            if answer.status == 204:
                # A held claim that ran its wait out: claim again at once. An early `204` (a
                # control plane that ignores `wait`, or one shutting down): wait as without it.
                if not waited or time.monotonic() - sent < shared.timings.wait * 0.9:
                    await shared.idle()
            elif not answer.ok:
                await self._refused(answer, body)
            else:
                tasks = self._granted(answer.body)
                if len(tasks) < body.get("max", 1):
                    # Fewer than asked: the queue is empty, so the next claim would only wait
                    # on the control plane. The routines just started come first.
                    await self._reports_first(tasks)

    async def _refused(self, answer: Answer, body: dict[str, Any]) -> None:
        """A refused claim. A field an older control plane does not know is left out of the next
        claim, a second later; any other refusal would come again: the next claim waits as for a
        control plane that does not answer (1, 2, 4... seconds), one log line a wait."""
        shared = self.shared
        if answer.code in _FIELD_REFUSALS and not _unknown_version(answer):
            log.warning("the control plane refused a claim: %s", answer.sentence)
            # An older control plane: one task a claim, each second. (Which of the two fields
            # it refused is in its sentence only; it may know neither.)
            shared.long_poll = shared.long_poll and "wait" not in body
            shared.claim_several = shared.claim_several and "max" not in body
            await shared.idle()
            return
        delay = retry_delay(self._refusals, shared.timings.max_retry)
        self._refusals += 1
        shared.claims_refused_now()
        log.warning(
            "the control plane refused a claim: %s%s; trying again in %ss",
            answer.sentence,
            self._advice(answer),
            f"{delay:g}",
        )
        await wait_for(shared.stop_event, delay)

    def _advice(self, answer: Answer) -> str:
        """What to do about a refusal of this supervisor's version (nothing for another)."""
        if not _unknown_version(answer):
            return ""
        folder = self.shared.settings.folder.resolve()
        return (
            " (serve that version's graph file again, or run `stateous init supervisor "
            f"{self.shared.url} {folder}` for the version it serves now)"
        )

    async def _claim(self, body: dict[str, Any]) -> Answer | None:
        """The answer of one claim; None when a stop began and it got none.

        A long-poll claim is cut when a stop begins (`cut`), so that an idle supervisor stops at
        once instead of at the end of the wait (issue 30): its connection closes, and the
        control plane ends a wait whose caller hung up without granting anything. It may have
        granted just before: the same request id is sent again, for no state, which answers
        only what that claim was granted (a repeated request id answers as the first did), and
        that runs as any grant at a graceful stop does.
        """
        if "wait" not in body:
            return await self._post(body)
        # A task of its own, so that `cut` can cancel it (one task a claim: no waiter each time).
        held = self._held = asyncio.ensure_future(self._post(body))
        try:
            return await held
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not held.cancelled() or (task is not None and task.cancelling()):
                raise  # not cut: this loop itself is cancelled
        finally:
            self._held = None
        return await self._post({**body, "states": [], "wait": 0})

    def cut(self) -> None:
        """A stop began: cut the long-poll claim in flight, if there is one (see `_claim`)."""
        if self._held is not None:
            self._held.cancel()

    async def _post(self, body: dict[str, Any]) -> Answer | None:
        shared = self.shared
        return await shared.persist(partial(shared.remote.call, "POST", "/tasks/claim", body))

    def _body(self, request: str) -> dict[str, Any]:
        """A claim of the contract's version: `max` is the free slots, `wait` the long-poll,
        unless refused before."""
        shared = self.shared
        body: dict[str, Any] = {
            "supervisor": shared.settings.name,
            "states": shared.registry.states,
            "request": request,
            # Only tasks of tokens of the contract's version; a control plane of
            # before versions ignores the field and serves this checksum only (start-up).
            "checksum": shared.settings.checksum,
        }
        if shared.long_poll:
            body["wait"] = shared.timings.wait
        if shared.claim_several:
            free = shared.settings.tasks - len(shared.grants)
            body["max"] = max(1, min(free, MAX_GRANTS))
        return body

    def _granted(self, body: object) -> list[object]:
        """Start each grant of `{"grants": [...]}`, or the one grant of a claim without `max`
        (a control plane without batch claims ignores the field); answers the grants' task ids."""
        grants = body.get("grants") if isinstance(body, dict) and "task" not in body else None
        if grants is None:
            self._take(body)
            return [_task_of(body)]
        if not isinstance(grants, list) or not grants:
            log.warning(
                "the control plane refused a claim: the claimed task is not valid: "
                "'grants' is not a list of grants"
            )
            return []
        for grant in grants:
            self._take(grant)
        return [_task_of(grant) for grant in grants]

    async def _reports_first(self, tasks: list[object]) -> None:
        """Let the grants just taken run their routines and queue their reports before the next
        claim is written, for at most `REPORTS_FIRST` seconds.

        Called when a claim got fewer tasks than it asked for: the next claim would wait on the
        control plane (the hand-off), and is not on the path of these tasks, while their
        routines and reports are. With the claim written at once, a `def` routine's thread
        waited for the event loop (the GIL) while the loop built and sent the claim, and the
        report's send waited behind it: 0.5-1 ms a task. (A claim that got all it asked for
        fills every free slot: no claim follows until a slot is free.)
        """
        waits = [
            asyncio.ensure_future(grant.queued.wait())
            for task in tasks
            if isinstance(task, int) and (grant := self.shared.grants.get(task)) is not None
        ]
        if not waits:
            return
        _, pending = await asyncio.wait(waits, timeout=REPORTS_FIRST)
        for wait in pending:
            wait.cancel()


def _unknown_version(answer: Answer) -> bool:
    """The refusal of a claim whose `checksum` the control plane has not on record (a database
    that never served this supervisor's version): its code is that of a bad field, and only its
    sentence tells the two apart."""
    return answer.code == "invalid_argument" and "is not a version on record" in answer.sentence


def _task_of(grant: object) -> object:
    return grant.get("task") if isinstance(grant, dict) else None
