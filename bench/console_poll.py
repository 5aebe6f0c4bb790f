"""One refresh of the console's tokens screen, as the console makes it: shared by the benches
that measure what watching costs (`e2e.py --observer`, `scale_reads.py`)."""

from __future__ import annotations

import asyncio

from stateous.tui.api import PAGE, ControlPlane
from stateous.tui.widgets.status_bar import INBOX_LIMIT


async def refresh(plane: ControlPlane) -> None:
    """The app's poll (`/health`, `/stats`, `/inbox?limit=100`, one after the other;
    `/workflow` only when the checksum changed, so not here) beside the tokens screen's listing
    with its first page only loaded (`/tokens?limit=100`, the page the operator has not scrolled
    past), with the console's own client and limits."""

    async def poll() -> None:
        await plane.health()
        await plane.stats()
        await plane.inbox(limit=INBOX_LIMIT)

    await asyncio.gather(poll(), plane.token_page(limit=PAGE))
