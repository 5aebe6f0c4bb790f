"""`stateous serve --retain DURATION` as a real process, on SQLite and Postgres:
ended tokens older than the cut go with all their rows, live and recently ended tokens stay,
the log line, a replica that does not prune until it holds, and pruning beside a supervisor
under load."""

from __future__ import annotations

import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, create_engine, text

from tests.integration.supervisor.procs import DATA, routine_folder, wait_until
from tests.support import ServeProcess, backends, postgres_database, serve_process, start_supervise
from tests.support.graphs import DEV, write_graph

REPO = {"repo": "acme/api"}
#: The pace of `--retain` under test: look every 0.1 s, log every second.
PACE = {"STATEOUS_RETAIN_IDLE_SECONDS": "0.1", "STATEOUS_RETAIN_LOG_SECONDS": "1"}
PRUNED = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} stateous\.retention: pruned ([\d,]+) "
    r"(tokens?) ended before \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"
)
#: The rows of a family, by table (children share the top's id as their prefix).
TABLES = ("tokens", "ledger", "tasks", "timers", "memory", "audit", "token_keys")
STUCK = """
from pathlib import Path

from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
def coding(ctx: TicketContext) -> events.done | events.stuck:
    with Path("ran.txt").open("a", encoding="utf-8") as ran:
        ran.write(ctx.token + "\\n")
    return events.stuck()
"""


def post(url: str, path: str, body: dict[str, Any], status: int = 200) -> Any:
    answer = httpx.post(url + path, json=body, timeout=30)
    assert answer.status_code == status, answer.text
    return answer.json()


def status_of(url: str, token: str) -> int:
    return httpx.get(f"{url}/tokens/{token}", timeout=30).status_code


def listed(url: str, prefix: str) -> list[str]:
    """The ids of the tokens whose id starts with `prefix`."""
    answer = httpx.get(f"{url}/tokens", params={"prefix": prefix, "limit": 1000}, timeout=30)
    assert answer.status_code == 200, answer.text
    return [token["token"] for token in answer.json()]


def rows_of(engine: Engine, prefix: str) -> dict[str, int]:
    """How many rows of each table name a token whose id starts with `prefix`."""
    found = {}
    with engine.connect() as conn:
        for table in TABLES:
            query = text(f"SELECT count(*) FROM {table} WHERE token LIKE :p")  # fixed names
            found[table] = conn.execute(query, {"p": prefix + "%"}).scalar_one()
    return found


def pruned_counts(served: ServeProcess) -> list[int]:
    """The counts of the retention lines so far (`1 token`, else `N tokens`)."""
    served.read_lines(timeout=0.05)
    found = [m.groups() for line in served.lines if (m := PRUNED.match(line))]
    counts = [int(count.replace(",", "")) for count, _ in found]
    assert [noun for _, noun in found] == ["token" if n == 1 else "tokens" for n in counts]
    return counts


def make_old(url: str) -> None:
    """OLD-A (cancelled in `reviews`, with two children), OLD-B (cancelled), LIVE (active)."""
    post(url, "/tokens", {"token": "OLD-A", "context": REPO}, 201)
    grant = post(url, "/tasks/claim", {"supervisor": "box", "states": ["coding"]})
    post(url, f"/tasks/{grant['task']}/report", {"kind": "event", "event": "done"})
    for token in ("OLD-B", "LIVE"):
        post(url, "/tokens", {"token": token, "context": REPO}, 201)
    for token in ("OLD-A", "OLD-B"):
        post(url, f"/tokens/{token}/cancel", {})


@pytest.fixture
def dev_graph(tmp_path: Path) -> Path:
    return write_graph(tmp_path, DEV)


def test_retain_prunes_what_ended_before_the_cut_and_keeps_the_rest(
    db_url: str, dev_graph: Path, tmp_path: Path
) -> None:
    with serve_process(dev_graph, db_url, cwd=tmp_path) as first:
        make_old(first.url)
        children = httpx.get(f"{first.url}/tokens", params={"parent": "OLD-A"}, timeout=30)
        assert len(children.json()) == 2
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        assert rows_of(engine, "OLD-")["ledger"] > 0
        time.sleep(2.2)  # both ended more than 2 s ago when `--retain 2s` starts
        extra = ["--retain", "2s"]
        with serve_process(dev_graph, db_url, cwd=tmp_path, extra=extra, env=PACE) as served:
            url = served.url
            wait_until(lambda: status_of(url, "OLD-A") == 404, 15, "OLD-A pruned")
            assert status_of(url, "OLD-B") == 404
            assert rows_of(engine, "OLD-") == dict.fromkeys(TABLES, 0)
            assert status_of(url, "LIVE") == 200
            # Both went in the first transaction: one line, at once.
            wait_until(lambda: pruned_counts(served) == [2], 5, "the first line")
            post(url, "/tokens/LIVE/cancel", {})
            time.sleep(0.5)
            assert status_of(url, "LIVE") == 200  # ended half a second ago: it stays
            wait_until(lambda: status_of(url, "LIVE") == 404, 15, "LIVE pruned")
            assert rows_of(engine, "LIVE") == dict.fromkeys(TABLES, 0)
            wait_until(lambda: pruned_counts(served) == [2, 1], 5, "the second line")
    finally:
        engine.dispose()


@pytest.mark.skipif("postgres" not in backends(), reason="replicas need Postgres")
def test_a_replica_prunes_only_once_it_holds(dev_graph: Path, tmp_path: Path) -> None:
    knobs = {"STATEOUS_SINCE_SECONDS": "1", **PACE}
    with postgres_database() as url:
        holder = serve_process(dev_graph, url, cwd=tmp_path, env=knobs)
        first = holder.__enter__()
        try:
            make_old(first.url)
            extra = ["--replica", "--retain", "1s"]
            with serve_process(dev_graph, url, cwd=tmp_path, extra=extra, env=knobs) as replica:
                time.sleep(3.0)  # the ended tokens are due for a second and more
                assert status_of(replica.url, "OLD-B") == 200
                assert pruned_counts(replica) == []
                holder.__exit__(None, None, None)
                wait_until(lambda: status_of(replica.url, "OLD-B") == 404, 20, "OLD-B pruned")
                assert status_of(replica.url, "OLD-A") == 404
                assert status_of(replica.url, "LIVE") == 200
                wait_until(lambda: pruned_counts(replica) == [2], 5, "the line")
        finally:
            first.stop()


@pytest.fixture
def sdlc(tmp_path: Path) -> Path:
    graph = tmp_path / "sdlc.json"
    shutil.copy(DATA / "sdlc.json", graph)
    return graph


def start_all(url: str, names: list[str]) -> None:
    """Start the tokens from four threads, a little at a time, so they flow while pruning runs."""

    def start(name: str) -> None:
        post(url, "/tokens", {"token": name, "context": REPO}, 201)
        time.sleep(0.01)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(start, names))


def test_retain_beside_a_supervisor_under_load(db_url: str, sdlc: Path, tmp_path: Path) -> None:
    names = [f"T-{n:04d}" for n in range(300)]
    extra = ["--retain", "1s"]
    with serve_process(sdlc, db_url, cwd=tmp_path, extra=extra, env=PACE) as served:
        folder = routine_folder(tmp_path, served.url, "box", STUCK, "tasks: 16\n")
        running = start_supervise(folder)
        try:
            start_all(served.url, names)
            wait_until(lambda: listed(served.url, "T-") == [], 90, "every token pruned")
        finally:
            running.stop()
        # Each routine ran, and each token's one report (`stuck`, which completes it) was
        # accepted: nothing failed, and every token was pruned once it ended.
        ran = set((tmp_path / "ran.txt").read_text(encoding="utf-8").split())
        assert ran == set(names)
        metrics = httpx.get(f"{served.url}/metrics", timeout=30).text
        assert "stateous_reports_total 300.0" in metrics.splitlines()
        wait_until(lambda: sum(pruned_counts(served)) == 300, 10, "the lines add up")
        live = httpx.get(f"{served.url}/tokens", timeout=30).json()
        assert live == []
        assert not [line for line in served.lines if "retention batch failed" in line]
