"""SQLite at steady state under `serve --retain`: the file stops growing.

One `stateous serve --retain 1s` of the `orders` starter on a new SQLite file and one supervisor;
`--cycles` times (5): start `--tokens` tokens, wait until the supervisor completed them all and
the retention pruned them all (no token of the cycle left), checkpoint the WAL into the file
(PASSIVE, beside the server's own checkpoints) and read the file's size. SQLite reuses the
pages a prune frees (no `auto_vacuum`), so the size after the last cycle should be within 20 %
of the size after the first: `ratio` is last ÷ first.
Usage: `python bench/retention.py [--tokens N] [--cycles N]`. One JSON line.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set
from common import QUIET

from tests.support.processes import launch_serve  # common put the checkout on the path

#: `--retain`'s pace: look for due tokens every 0.2 s once none is left.
PACE = {"STATEOUS_RETAIN_IDLE_SECONDS": "0.2"}


def left(engine: Engine, prefix: str) -> int:
    """Tokens of `prefix` still in the database."""
    where, params = common.id_filter(engine, prefix)
    with engine.connect() as conn:
        return int(
            conn.execute(text(f"SELECT count(*) FROM tokens WHERE {where}"), params).scalar_one()
        )


def settled_size(engine: Engine, path: Path) -> int:
    """The file's size once the WAL is checkpointed into it."""
    with engine.connect() as conn:
        conn.execute(text("PRAGMA wal_checkpoint(PASSIVE)"))
    return path.stat().st_size


def wait_gone(engine: Engine, prefix: str, timeout: float = 600) -> float:
    """Wait until no token of `prefix` is left; answers the seconds it took."""
    began = time.monotonic()
    while left(engine, prefix):
        if time.monotonic() - began > timeout:
            raise SystemExit(f"error: tokens of {prefix} still there after {timeout:.0f} s")
        time.sleep(0.1)
    return time.monotonic() - began


def measure(folder: Path, tokens: int, cycles: int) -> dict[str, object]:
    """Run the cycles; answers the figures."""
    (supervisor,) = common.prepare(folder)
    path = folder / "stateous.db"
    db_url = f"sqlite:///{path}"
    served = launch_serve(
        "orders/build/orders.json", db_url, extra=["--retain", "1s"], env={**QUIET, **PACE},
        cwd=folder, log=folder / "serve.log", new_session=True, ready_timeout=120,
    )  # fmt: skip
    serve = common.Process("serve", served, served.url)
    with common.stopping(serve):
        sup = common.start_supervise(supervisor, serve.url, 16)
        engine = common.reader(db_url)
        sizes: list[int] = []
        seconds: list[float] = []
        with common.stopping(sup):
            for cycle in range(cycles):
                prefix = f"c{cycle}-"
                began = time.monotonic()
                common.start_tokens(serve.url, [f"{prefix}{n:06d}" for n in range(tokens)])
                wait_gone(engine, prefix)
                seconds.append(round(time.monotonic() - began, 1))
                sizes.append(settled_size(engine, path))
        engine.dispose()
    return {
        "sizes": sizes,
        "ratio": round(sizes[-1] / sizes[0], 3),
        "cycle_seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    with common.fresh_folder() as folder:
        figures = measure(folder, args.tokens, args.cycles)
    common.emit({"bench": "retention", "db": "sqlite", "tokens": args.tokens,
                 "cycles": args.cycles, **figures})  # fmt: skip


if __name__ == "__main__":
    main()
