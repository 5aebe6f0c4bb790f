"""What a running supervisor learns of the versions the control plane serves: when a new
version becomes current (a `serve` of a changed graph file, or a replica that follows one), a
supervisor of the older version says so once, with the line it logs when it starts beside a
newer version."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from stateous.supervisor.remote import Answer, NoAnswer, UnreadableAnswer
from stateous.supervisor.shared import Shared
from stateous.supervisor.startup import older_version_line

__all__ = ["VersionWatch"]

log = logging.getLogger("stateous.supervisor")


class VersionWatch:
    """Every `timings.beat` seconds, the checksum of `GET /health` (one cheap request beside the
    beat, none on the claims' path); when it changed, and is not this supervisor's, the line of
    an older version (`GET /workflow/versions`)."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    async def run(self) -> None:
        """Look until cancelled; a look that fails is followed by the next one."""
        while True:
            await asyncio.sleep(self.shared.timings.beat)
            try:
                await self.look()
            except Exception:
                log.exception("a look at the control plane's version failed")

    async def look(self) -> None:
        """One look: log the older version's line when the version served has just changed."""
        shared = self.shared
        health = await self._get("/health")
        served = _field(health, "checksum")
        if served is None or served == shared.served:
            return
        mine = shared.settings.checksum
        if served == mine:
            shared.served = served
            return
        versions = await self._get("/workflow/versions")
        if versions is None:
            return  # no answer: the next look asks again
        shared.served = served
        rows = versions.body if versions.ok else None
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            return  # no versions there: the claims say what is wrong
        line = older_version_line(rows, mine, served)
        if line is not None:  # a version not on record: the claims' refusal says what to do
            log.info("%s", line)

    async def _get(self, path: str) -> Answer | None:
        """One try of `GET path`: None without an answer (the claims log that)."""
        try:
            return await self.shared.remote.call("GET", path)
        except (NoAnswer, UnreadableAnswer):
            return None


def _field(answer: Answer | None, name: str) -> str | None:
    body: Any = answer.body if answer is not None and answer.ok else None
    value = body.get(name) if isinstance(body, dict) else None
    return value if isinstance(value, str) else None
