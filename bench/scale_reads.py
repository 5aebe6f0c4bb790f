"""The read figures of docs/performance.md against a real `serve` on the preloaded database: the p95
of `GET /health` (the floor: a route that reads nothing), of `GET /stats`, of `GET /tokens` (limit
100) for each filter and its next page, of `GET /inbox`, `GET /audit`, `GET /tokens/{id}/why`, and
of one refresh of the console's tokens screen.

Each request is timed from the client's side (`perf_counter` around the whole exchange on a
kept-alive connection), one at a time on an otherwise idle control plane, after 3 untimed
requests; `n` timed requests a figure. A next page is followed through the answer's
`Link: <...>; rel="next"` header (keyset paging); a listing without one reports `no next
page`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import common
import console_poll
import httpx
import million

from stateous.tui.api import ControlPlane

WARM = 3


def p95(samples: list[float]) -> float:
    """The 95th percentile in ms, one decimal."""
    return round(common.percentile(samples, 0.95), 1)


def timed(http: httpx.Client, path: str) -> tuple[float, httpx.Response]:
    """One GET: its ms and its answer (which must be 200)."""
    began = time.perf_counter()
    answer = http.get(path)
    ms = (time.perf_counter() - began) * 1000
    if answer.status_code != 200:
        raise SystemExit(f"error: GET {path} answered {answer.status_code}: {answer.text[:300]}")
    return ms, answer


def always(path: str) -> Callable[[int], str]:
    """The same path at every request."""
    return lambda _k: path


def series(http: httpx.Client, paths: Callable[[int], str], n: int) -> dict[str, Any]:
    """p50/p95/max of `n` GETs of `paths(k)` (k = 0, 1, ...), after `WARM` untimed ones."""
    for k in range(WARM):
        timed(http, paths(k))
    samples = [timed(http, paths(k))[0] for k in range(n)]
    return {
        "p50_ms": round(common.percentile(samples, 0.5), 1),
        "p95_ms": p95(samples),
        "max_ms": round(max(samples), 1),
    }


def listings(current: str, other: str) -> dict[str, str]:
    """The `GET /tokens` queries measured, by name: every documented filter, limit 100."""
    value = json.dumps("item 42")
    return {
        "none": "",
        "status=completed": "status=completed",
        "status=active": "status=active",
        "status=paused": "status=paused",
        "state=review": "state=review",
        "prefix=order- (1,000,000 match)": "prefix=order-",
        "prefix=order-000012 (10 match)": "prefix=order-000012",
        "structure=current": f"structure={current}",
        "structure=other": f"structure={other}",
        "parent=order-0000001 (none)": "parent=order-0000001",
        "context.title": f"context.title={value}",
        "context.title+status=active": f"context.title={value}&status=active",
    }


def token_pages(http: httpx.Client, current: str, other: str, n: int) -> dict[str, Any]:
    """Each listing's first page, and its next page through the `Link` header."""
    figures: dict[str, Any] = {}
    for name, query in listings(current, other).items():
        path = "/tokens?" + "&".join(part for part in (query, "limit=100") if part)
        first = series(http, always(path), n)
        _ms, answer = timed(http, path)
        following = answer.links.get("next", {}).get("url")
        entry: dict[str, Any] = {"rows": len(answer.json()), "first": first}
        if following:
            entry["next"] = series(http, always(following), n)
        else:
            entry["next"] = "no next page"
        figures[name] = entry
    return figures


def why_paths(shape: million.Shape) -> Callable[[int], str]:
    """`why` of a token of each kind in turn: ended, waiting, with a timer, queued, paused."""
    ids = [million.ended_id(shape.ended // 2)]
    kinds = {shape.live_kind(i): i for i in range(shape.live)}
    ids += [million.live_id(i) for i in kinds.values()]
    return lambda k: f"/tokens/{ids[k % len(ids)]}/why"


async def console_refresh(url: str, n: int) -> dict[str, Any]:
    """One refresh of the console's tokens screen (`console_poll.refresh`), `n` times: the time
    until its requests are answered."""
    async with ControlPlane(url, timeout=60) as plane:

        async def once() -> float:
            began = time.perf_counter()
            await console_poll.refresh(plane)
            return (time.perf_counter() - began) * 1000

        for _ in range(WARM):
            await once()
        samples = [await once() for _ in range(n)]
    return {
        "p50_ms": round(common.percentile(samples, 0.5), 1),
        "p95_ms": p95(samples),
        "max_ms": round(max(samples), 1),
    }


def measure(url: str, shape: million.Shape, current: str, other: str, n: int) -> dict[str, Any]:
    """Every read figure, `n` requests each."""
    with httpx.Client(base_url=url, timeout=60) as http:
        # The floor of any answer on this machine now: a route that reads nothing.
        figures: dict[str, Any] = {"health": series(http, always("/health"), n)}
        figures["stats"] = series(http, always("/stats"), n)
        figures["tokens"] = token_pages(http, current, other, n)
        figures["inbox"] = series(http, always("/inbox"), n)
        figures["audit"] = series(http, always("/audit"), n)
        figures["why"] = series(http, why_paths(shape), n)
    figures["console_refresh"] = asyncio.run(console_refresh(url, n))
    return figures
