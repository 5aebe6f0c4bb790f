"""The supervisor's beat: `POST /supervisors/beat` at start, every
`timings.beat` seconds (10 by default), and once more at a graceful stop, so that the control
plane knows which supervisors are alive, what they serve, and how busy they are.

It is separate from the task heartbeats and the claims: a supervisor whose slots are all busy,
or one that runs nothing, stays visible. A beat gets one try; a control plane without the route
(`404`/`405`) ends the beats, with one log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from stateous.supervisor.remote import NoAnswer, UnreadableAnswer
from stateous.supervisor.shared import Shared

__all__ = ["Beats"]

log = logging.getLogger("stateous.supervisor")

_NO_ROUTE = (404, 405)
_LAST_BEAT_WAIT = 5.0  # a stop does not wait longer than this for its last beat


def _version() -> str:
    try:
        return version("stateous")
    except PackageNotFoundError:  # pragma: no cover - a checkout that was never installed
        return "unknown"


class Beats:
    """The beats of one supervisor."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.on = True  # until the control plane shows it has no beat route
        self._refused = ""  # the last refusal logged, so that a repeated one is logged once
        self._version = _version()
        self._host = socket.gethostname()

    def body(self, *, stopping: bool = False) -> dict[str, Any]:
        """The beat: who this supervisor is, what it serves, and the tasks it runs."""
        shared = self.shared
        body: dict[str, Any] = {
            "supervisor": shared.settings.name,
            "host": self._host,
            "pid": os.getpid(),
            "version": self._version,
            "states": shared.registry.states,
            "slots": shared.settings.tasks,
            "running": sorted(task for task, grant in shared.grants.items() if not grant.lost),
            "started_at": shared.started_at,
            "checksum": shared.settings.checksum,  # the version it serves
        }
        if stopping:
            body["stopping"] = True
        return body

    async def run(self) -> None:
        """Beat now, then every `timings.beat` seconds, until cancelled or refused for good."""
        while self.on:
            await self.beat()
            await asyncio.sleep(self.shared.timings.beat)

    async def last(self) -> None:
        """The beat of a graceful stop (`"stopping": true`): this supervisor is gone."""
        if self.on:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.beat(stopping=True), _LAST_BEAT_WAIT)

    async def beat(self, *, stopping: bool = False) -> None:
        """One beat, one try: a beat without answer is followed by the next one."""
        try:
            answer = await self.shared.remote.call(
                "POST", "/supervisors/beat", self.body(stopping=stopping)
            )
        except (NoAnswer, UnreadableAnswer):
            return  # the claims log an unreachable control plane; the next beat comes anyway
        except Exception:
            log.exception("a beat failed")
            return
        if answer.status in _NO_ROUTE:
            self.on = False
            log.info(
                "the control plane has no POST /supervisors/beat: this supervisor does not beat"
            )
        elif not answer.ok and answer.sentence != self._refused:
            self._refused = answer.sentence
            log.warning("the control plane refused a beat: %s", answer.sentence)
