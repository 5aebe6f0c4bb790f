"""The claim loop (spec 40 §4.3, spec 70 §2): claims tasks while slots are free, until a stop."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from stateous.supervisor.shared import Shared, wait_for

__all__ = ["ClaimLoop"]

log = logging.getLogger("stateous.supervisor")

# The refusals of a control plane that does not know the `wait` field of a claim (spec 70 §2).
_WAIT_REFUSALS = frozenset({"invalid_body", "invalid_argument", "unknown_field"})


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
            body: dict[str, Any] = {
                "supervisor": shared.settings.name,
                "states": shared.registry.states,
                "request": request,
            }
            waited = shared.long_poll
            if waited:
                body["wait"] = shared.timings.wait
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
                if waited and answer.code in _WAIT_REFUSALS:
                    shared.long_poll = False  # an older control plane: claim each second
                await shared.idle()
            else:
                self._take(answer.body)
