"""The claim loop (spec 40 §4.3, spec 70 §2): claims tasks while slots are free, until a stop."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from stateous.supervisor.shared import Shared, wait_for

__all__ = ["ClaimLoop"]

log = logging.getLogger("stateous.supervisor")

# The refusals of a control plane that does not know the `wait` (spec 70 §2) or the `max`
# (spec 75 §1) of a claim.
_FIELD_REFUSALS = frozenset({"invalid_body", "invalid_argument", "unknown_field"})
MAX_GRANTS = 64  # the most tasks one claim may ask for (spec 75 §1)


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
                answer = await shared.persist(
                    partial(shared.remote.call, "POST", "/tasks/claim", body)
                )
            except Exception:
                log.exception("a claim failed")
                await shared.idle()
                continue
            if answer is None:
                return
            request = uuid.uuid4().hex
            if answer.status == 204:
                # A held claim that ran its wait out: claim again at once. An early `204` (a
                # control plane that ignores `wait`, or one shutting down): wait as without it.
                if not waited or time.monotonic() - sent < shared.timings.wait * 0.9:
                    await shared.idle()
            elif not answer.ok:
                log.warning("the control plane refused a claim: %s", answer.sentence)
                if answer.code in _FIELD_REFUSALS:
                    # An older control plane: one task a claim, each second. (Which of the
                    # two fields it refused is in its sentence only; it may know neither.)
                    shared.long_poll = shared.long_poll and not waited
                    shared.claim_several = shared.claim_several and "max" not in body
                await shared.idle()
            else:
                self._granted(answer.body)
                # The grants' routines start before the next claim is written: on a busy event
                # loop the claim's request would otherwise come first (0.3-0.5 ms a task).
                await asyncio.sleep(0)

    def _body(self, request: str) -> dict[str, Any]:
        """A claim: `max` is the free slots, `wait` the long-poll, unless refused before."""
        shared = self.shared
        body: dict[str, Any] = {
            "supervisor": shared.settings.name,
            "states": shared.registry.states,
            "request": request,
        }
        if shared.long_poll:
            body["wait"] = shared.timings.wait
        if shared.claim_several:
            free = shared.settings.tasks - len(shared.grants)
            body["max"] = max(1, min(free, MAX_GRANTS))
        return body

    def _granted(self, body: object) -> None:
        """Start each grant of `{"grants": [...]}`, or the one grant of a claim without `max`
        (a control plane of spec 20 ignores the field)."""
        grants = body.get("grants") if isinstance(body, dict) and "task" not in body else None
        if grants is None:
            self._take(body)
        elif not isinstance(grants, list) or not grants:
            log.warning(
                "the control plane refused a claim: the claimed task is not valid: "
                "'grants' is not a list of grants"
            )
        else:
            for grant in grants:
                self._take(grant)
