"""The console with 10,000 tokens in the database: time to open the tokens screen, and to answer
a key press (issue 7). Prints one JSON line.

A real `stateous serve` on SQLite holds 10,000 completed `orders` tokens (bulk-loaded through
the store's tables) plus `--live` active ones started over HTTP. The console runs headless
(Textual's pilot) at 120x40 and speaks HTTP to it as it does for an operator:

- `open_s`: from creating the console to the tokens screen showing its first page (100 rows)
  and the states panel (health, graph, stats and the listing fetched and rendered);
- `key_ms`: from a key press to the console having answered it, p50 and max over `--presses`
  presses each: `down` (cursor), `h` (hide/show children: the loaded rows arranged again), `1`/`0`
  (a status filter: one request and the rows again), `enter` (open the token screen, the token
  fetched and shown) and `escape` (back to the list).

Targets: open under 1 s, a key press under 100 ms.
Usage: `python bench/console.py [--tokens 10000] [--live 200] [--presses 20]`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import events
from textual.widgets import DataTable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import (  # noqa: E402
    emit,
    fresh_folder,
    percentile,
    prepare,
    start_serve,
    start_tokens,
    stopping,
)
from preload import preload  # noqa: E402

from stateous.tui.app import ConsoleApp, make_console  # noqa: E402
from stateous.tui.screens.token import TokenScreen  # noqa: E402
from stateous.tui.screens.tokens import TokensScreen  # noqa: E402
from stateous.tui.widgets.token_list import TokenList  # noqa: E402

PAUSE = 0.3
"""Seconds between two timed presses."""


async def until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Let the app run until `condition` holds."""
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise SystemExit("error: the console did not answer in time")
        await asyncio.sleep(0.0005)


async def press(app: ConsoleApp, key: str, done: Callable[..., bool]) -> float:
    """Milliseconds from a key event reaching the app until `done()` holds.

    The key goes in as a terminal's would (an event posted to the app), not through the pilot,
    whose `press` also waits for the app to be idle and would count the polls' work.
    """
    character = key if len(key) == 1 else None
    # An operator reads the screen between keys: each press starts from a settled screen
    # (with the polls going on at the refresh interval).
    await asyncio.sleep(PAUSE)
    began = time.perf_counter()
    app.post_message(events.Key(key, character))
    await until(done)
    return (time.perf_counter() - began) * 1000


async def measure(url: str, presses: int) -> dict[str, Any]:
    """Open the console on `url`, then time each kind of key press."""
    began = time.perf_counter()
    app = make_console(url, refresh=1.0)
    async with app.run_test(size=(120, 40)):
        await until(
            lambda: (
                isinstance(app.screen, TokensScreen)
                and app.screen.loaded
                and app.stats is not None
                and app.screen.query_one("#states", DataTable).row_count > 0
            )
        )
        opened = time.perf_counter() - began
        screen = app.screen
        assert isinstance(screen, TokensScreen)
        table = screen.query_one("#tokens", TokenList)
        keys: dict[str, list[float]] = {
            name: [] for name in ("down", "h", "1/0", "enter", "escape")
        }
        for _ in range(presses):
            row = table.cursor
            keys["down"].append(await press(app, "down", lambda row=row: table.cursor == row + 1))
            hidden = screen.hide_children
            keys["h"].append(
                await press(app, "h", lambda hidden=hidden: screen.hide_children != hidden)
            )
            key, want = ("1", "active") if screen.status_filter is None else ("0", None)
            screen.loaded = False
            keys["1/0"].append(
                await press(
                    app, key, lambda want=want: screen.status_filter == want and screen.loaded
                )
            )
            chosen = table.cursor_key
            keys["enter"].append(
                await press(
                    app,
                    "enter",
                    lambda chosen=chosen: (
                        isinstance(app.screen, TokenScreen)
                        and (app.screen.token or {}).get("token") == chosen
                    ),
                )
            )
            keys["escape"].append(await press(app, "escape", lambda: app.screen is screen))
        return {
            "open_s": round(opened, 3),
            "rows_shown": len(table.keys),
            "key_ms": {
                name: {"p50": round(percentile(v, 0.5), 1), "max": round(max(v), 1)}
                for name, v in keys.items()
            },
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=10000, help="completed tokens preloaded")
    parser.add_argument("--live", type=int, default=200, help="active tokens started over HTTP")
    parser.add_argument("--presses", type=int, default=20, help="presses of each key")
    args = parser.parse_args()
    with fresh_folder() as folder:
        prepare(folder, supervisors=0)
        db_url = f"sqlite:///{folder / 'stateous.db'}"
        preload(db_url, args.tokens)
        serve = start_serve(folder, db_url)
        with stopping(serve):
            start_tokens(serve.url, [f"LIVE-{n}" for n in range(args.live)])
            figures = asyncio.run(measure(serve.url, args.presses))
    emit(
        {
            "bench": "console",
            "tokens": args.tokens + args.live,
            **figures,
            "targets": {"open_s": 1.0, "key_ms": 100.0},
        }
    )


if __name__ == "__main__":
    main()
