"""Claims beside an older version's queue: e2e of the current version on a database holding
100,000 queued tasks of an older version, divided by the same on a database without them.

The queue index is (status, structure, state, id) (docs/data.md), so a claim of the current
version must not wade through the tasks of another. Each database first serves the `orders`
starter (the older version, OLD); the loaded one then gets `--old` tokens started on it with
`POST /tokens/batch` (each waits in `draft` with its task queued, since no supervisor of OLD
ever runs), the bare one none. Each run copies one of the two (as `scale.py` does), serves a
new version on it (the starter with one more event, `withdrawn`: another structure) and runs
`e2e.py`'s measure with a supervisor of that new version: 50 tokens to warm up, then
`--tokens`. After each run the old tasks are counted again, still queued on their own
structure: a claim that took one would fail the bench rather than flatter it.

The runs alternate, bare then loaded, `--rounds` times; `ratio` is the loaded runs' mean
tokens per second over the bare runs' mean, and the CPU per token of `serve` and `supervise`
is compared the same way (steadier than the rate on a shared machine).
Usage: `python bench/versions.py [--old N] [--tokens N] [--rounds N] [--db sqlite|postgres]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set
import e2e
import scale

#: Appended to the starter's flow.py: the new version, a structure of its own.
WITHDRAWN = """
# bench/versions.py: the new version, with one more event.
withdrawn = flow.event("withdrawn")
flow.transition(draft, END, on=withdrawn)
"""

#: Tokens a `POST /tokens/batch` (its most).
BATCH = 1000

#: Routines a supervisor runs at once, as in e2e.py's default.
TASKS = 16


def new_version(folder: Path) -> None:
    """Change the starter in `folder` into the new version and compile it in place."""
    flow = folder / "orders" / "flow.py"
    flow.write_text(flow.read_text(encoding="utf-8") + WITHDRAWN, encoding="utf-8")
    common.run_step(folder, "compile", "orders/flow.py")


def start_old(url: str, count: int) -> None:
    """Start `count` tokens `old-<n>` with `POST /tokens/batch`, or exit with the refusal."""
    with httpx.Client(base_url=url, timeout=300) as http:
        for first in range(0, count, BATCH):
            items = [
                {"token": f"old-{n}", "context": {"title": "old"}}
                for n in range(first, min(first + BATCH, count))
            ]
            answer = http.post("/tokens/batch", json={"tokens": items})
            if answer.status_code != 200:
                raise SystemExit(f"error: batch {first} answered {answer.status_code}")
            refused = [a for a in answer.json()["answers"] if a["status"] != 201]
            if refused:
                raise SystemExit(f"error: {len(refused)} start(s) of batch {first}: {refused[0]}")


def fill(folder: Path, db_url: str, count: int) -> float:
    """Serve the starter (OLD) on `db_url` and start `count` tokens on it; answers seconds."""
    common.run_step(folder, "init", "workflow", "orders")
    serve = common.start_serve(folder, db_url)
    began = time.perf_counter()
    with common.stopping(serve):
        start_old(serve.url, count)
    return time.perf_counter() - began


def queue_of(db_url: str) -> dict[str, int]:
    """The versions on record, and the queued tasks on another structure than `bench-0`'s."""
    engine = common.reader(db_url)
    others = text(
        "SELECT count(*) FROM tasks WHERE status = 'queued' AND structure <> "
        "(SELECT structure FROM tokens WHERE token = 'bench-0')"
    )
    try:
        with engine.connect() as conn:
            versions = conn.execute(text("SELECT count(*) FROM workflow_versions")).scalar_one()
            return {"versions": int(versions), "old_queued": int(conn.execute(others).scalar_one())}
    finally:
        engine.dispose()


def run(folder: Path, db_url: str, tokens: int) -> dict[str, Any]:
    """Serve the new version on `db_url`, supervise it, warm up, measure; then count the
    old queue again."""
    made = common.prepare(folder, change=new_version)
    serve = common.start_serve(folder, db_url)
    running = [serve]
    try:
        running.append(common.start_supervise(made[0], serve.url, TASKS))
        e2e.measure(serve.url, db_url, 50, "warm")
        figures = e2e.measure_cost(
            [serve], running[1:], False, lambda: e2e.measure(serve.url, db_url, tokens, "bench")
        )
    finally:
        for process in reversed(running):
            process.stop()
    return {**figures, **queue_of(db_url)}


def checked(figures: dict[str, Any], old: int) -> dict[str, Any]:
    """The figures of one run, or exit when its database is not what the run needed."""
    if figures["versions"] != 2 or figures["old_queued"] != old:
        raise SystemExit(
            f"error: expected 2 versions and {old} old tasks queued, found "
            f"{figures['versions']} and {figures['old_queued']}"
        )
    keep = ("tokens_per_second", "serve_cpu_ms_per_token", "supervise_cpu_ms_per_token")
    return {name: figures[name] for name in keep}


def means(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The mean of each figure over `runs`."""
    return {name: round(statistics.mean(r[name] for r in runs), 3) for name in runs[0]}


def summary(bare: list[dict[str, Any]], loaded: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs, their means, and loaded ÷ bare of each mean."""
    mean_bare, mean_loaded = means(bare), means(loaded)
    return {
        "bare_runs": bare,
        "loaded_runs": loaded,
        "bare_mean": mean_bare,
        "loaded_mean": mean_loaded,
        "ratio": round(mean_loaded["tokens_per_second"] / mean_bare["tokens_per_second"], 3),
        "serve_cpu_ratio": round(
            mean_loaded["serve_cpu_ms_per_token"] / mean_bare["serve_cpu_ms_per_token"], 3
        ),
        "supervise_cpu_ratio": round(
            mean_loaded["supervise_cpu_ms_per_token"] / mean_bare["supervise_cpu_ms_per_token"], 3
        ),
    }


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--old", type=int, default=100_000, help="queued tasks of OLD")
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="pairs of runs, bare then loaded")
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    bare: list[dict[str, Any]] = []
    loaded: list[dict[str, Any]] = []
    with (
        common.fresh_folder() as keep_bare,
        common.fresh_folder() as keep_loaded,
        common.database(args.db, keep_bare) as bare_template,
        common.database(args.db, keep_loaded) as loaded_template,
    ):
        fill(keep_bare, bare_template, 0)
        seconds = fill(keep_loaded, loaded_template, args.old)
        scale.settle(bare_template)
        scale.settle(loaded_template)
        for _ in range(args.rounds):
            for template, runs, old in (
                (bare_template, bare, 0),
                (loaded_template, loaded, args.old),
            ):
                with (
                    common.fresh_folder() as folder,
                    scale.copy_of(args.db, template, folder) as db_url,
                ):
                    runs.append(checked(run(folder, db_url, args.tokens), old))
    common.emit(
        {
            "bench": "versions",
            "database": args.db,
            "old_tasks": args.old,
            "fill_seconds": round(seconds, 1),
            "tokens": args.tokens,
            "rounds": args.rounds,
            **summary(bare, loaded),
        }
    )


if __name__ == "__main__":
    main()
