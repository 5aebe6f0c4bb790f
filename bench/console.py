"""The console with 10,000 tokens in the database: time to open the tokens screen, and to answer
a key press (issue 7). Prints one JSON line.

A real `stateous serve` on SQLite holds 10,000 completed `orders` tokens (bulk-loaded through
the store's tables) plus `--live` active ones started over HTTP. The console runs headless
(Textual's pilot) at 120x40 and speaks HTTP to it as it does for an operator:

- `open_s`: from creating the console to the tokens screen showing its first 1000 rows and the
  states panel (health, graph, stats and the listing fetched and rendered);
- `key_ms`: from a key press to the screen having answered it, for `down` (move the cursor),
  `h` (hide/show children: the 1000 rows rearranged), `1`/`0` (a status filter: one request and
  the rows rendered again) and `enter` + `escape` (open a token and go back), p50 and max over
  `--presses` presses each.

Targets: open under 1 s, a key press under 100 ms.
Usage: `python bench/console.py [--tokens 10000] [--live 200] [--presses 20]`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

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

from tui.app import ConsoleApp, make_console  # noqa: E402
from tui.screens.token import TokenScreen  # noqa: E402
from tui.screens.tokens import TokensScreen  # noqa: E402
from tui.widgets.token_list import TokenList  # noqa: E402


async def until(condition: Callable[[], bool], pilot: Any, timeout: float = 30.0) -> None:
    """Let the app run until `condition` holds."""
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise SystemExit("error: the console did not answer in time")
        await pilot.pause(0.001)


async def timed(
    pilot: Any, press: Callable[[], Awaitable[None]], done: Callable[[], bool]
) -> float:
    """Milliseconds from a key press until `done()` holds."""
    began = time.perf_counter()
    await press()
    await until(done, pilot)
    return (time.perf_counter() - began) * 1000


def tokens_screen(app: ConsoleApp) -> TokensScreen:
    screen = app.get_screen("tokens")
    assert isinstance(screen, TokensScreen)
    return screen


async def measure(url: str, presses: int) -> dict[str, Any]:
    """Open the console on `url`, then time each kind of key press."""
    began = time.perf_counter()
    app = make_console(url, refresh=1.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            lambda: (
                isinstance(app.screen, TokensScreen)
                and app.screen.loaded
                and app.stats is not None
                and app.screen.query_one("#states").row_count > 0
            ),  # type: ignore[attr-defined]
            pilot,
        )
        opened = time.perf_counter() - began
        screen = tokens_screen(app)
        rows = len(screen._keys)
        keys: dict[str, list[float]] = {"down": [], "h": [], "status_filter": [], "open_back": []}
        table = screen.query_one("#tokens", TokenList)
        for _ in range(presses):
            row = table.cursor
            keys["down"].append(
                await timed(
                    pilot, lambda: pilot.press("down"), lambda row=row: table.cursor == row + 1
                )
            )
            hidden = screen.hide_children
            keys["h"].append(
                await timed(
                    pilot,
                    lambda: pilot.press("h"),
                    lambda hidden=hidden: screen.hide_children != hidden,
                )
            )
            before = screen.status_filter
            key, want = ("1", "active") if before is None else ("0", None)

            async def press_filter(key: str = key) -> None:
                screen.loaded = False
                await pilot.press(key)

            keys["status_filter"].append(
                await timed(
                    pilot,
                    press_filter,
                    lambda want=want: screen.status_filter == want and screen.loaded,
                )
            )

            async def open_back() -> None:
                await pilot.press("enter")
                await until(lambda: isinstance(app.screen, TokenScreen), pilot)
                await pilot.press("escape")

            keys["open_back"].append(
                await timed(pilot, open_back, lambda: isinstance(app.screen, TokensScreen))
            )
        return {
            "open_s": round(opened, 3),
            "rows_shown": rows,
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
