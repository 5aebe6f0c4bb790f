"""A holder and two replicas on one Postgres database, with supervisors spread
across them (each with all three URLs, in another order) under load: the holder, a replica and a
supervisor are SIGKILLed, each restarted (a killed control plane comes back as a replica).

No token lost or moved twice, no attempt held by two supervisors, every timer fired once, the
outboxes empty at the end.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.faults.harness import (
    SDLC_GRAPH,
    SERVE_ENV,
    Load,
    Plane,
    check_invariants,
    make_folder,
    outbox_count,
    scaled,
    supervise,
    supervisor_figures,
    wait_all_ended,
)
from tests.support import backends, free_port, postgres_database
from tests.support.processes import start_serve

#: The long tier (`make test-long`): three control planes and their faults, minutes.
pytestmark = [
    pytest.mark.long,
    pytest.mark.skipif("postgres" not in backends(), reason="replicas need Postgres"),
]

TOOK = "this control plane took the hold on the database; it runs the clock now"


class Replica(Plane):
    """A `stateous serve --replica` on a fixed port."""

    def _popen(self) -> subprocess.Popen[str]:
        return start_serve(
            SDLC_GRAPH,
            self.db_url,
            listen=f"127.0.0.1:{self.port}",
            extra=["--replica"],
            env={**SERVE_ENV, **self.env},
            cwd=self.cwd,
        )


def role(plane: Plane) -> str:
    """`holder` or `replica`, from GET /health."""
    return str(httpx.get(plane.url + "/health", timeout=10).json()["role"])


def wait_holder(planes: list[Plane], timeout: float = 10.0) -> Plane:
    """The one that holds the database (waits for a takeover)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        holders = []
        for plane in planes:
            try:
                if role(plane) == "holder":
                    holders.append(plane)
            except httpx.HTTPError:
                pass
        assert len(holders) <= 1, "two holders"
        if holders:
            return holders[0]
        time.sleep(0.1)
    raise AssertionError("no holder")


def check_timers(db_url: str) -> int:
    """Every fired timer has exactly one `timer_fired` row; no pending timer is overdue by more
    than a few ticks. Answers how many fired."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as conn:
        fired = conn.execute(text("SELECT token, event FROM timers WHERE status = 'fired'")).all()
        rows = conn.execute(text("SELECT token, data FROM ledger WHERE kind = 'timer_fired'")).all()
        overdue = conn.execute(
            text(
                "SELECT count(*) FROM timers t JOIN tokens k ON k.token = t.token "
                "WHERE t.status = 'pending' AND k.status = 'active' "
                "AND t.due_at < now() at time zone 'utc' - interval '5 seconds'"
            )
        ).scalar_one()
    engine.dispose()
    assert Counter(r.token for r in rows) == Counter(r.token for r in fired)
    assert overdue == 0
    return len(fired)


def come_back(everyone: list[Plane], dead: Plane, folder: Path) -> None:
    """A killed control plane starts again as a replica on its port, in its place."""
    back = Replica(dead.db_url, dead.port, folder)
    back.start_retrying()
    everyone[everyone.index(dead)] = back


def one_round(everyone: list[Plane], runs: list[Any], folders: list[Path], tmp: Path) -> list[str]:
    """SIGKILL the holder, then a replica, then a supervisor; each comes back."""
    time.sleep(scaled(2, 5))
    old = wait_holder(everyone)
    old.kill()
    new = wait_holder(everyone, timeout=5)  # a replica took the hold
    assert new is not old
    come_back(everyone, old, tmp)
    time.sleep(scaled(1, 3))
    victim = next(p for p in everyone if p is not new)
    victim.kill()
    come_back(everyone, victim, tmp)
    assert wait_holder(everyone) is new
    time.sleep(scaled(1, 3))
    runs[1].kill()
    runs[1] = supervise(folders[1])
    return ["holder", "replica", "supervisor"]


def test_holder_replica_and_supervisor_sigkilled_under_load(tmp_path: Path) -> None:
    with postgres_database() as db_url:
        holder = Plane(db_url, free_port(), tmp_path)
        holder.start_retrying()
        replicas = [Replica(db_url, free_port(), tmp_path) for _ in range(2)]
        for replica in replicas:
            replica.start()
        everyone: list[Plane] = [holder, *replicas]
        urls = [plane.url for plane in everyone]
        folders = [
            make_folder(tmp_path, ", ".join(urls[i:] + urls[:i]), f"box-{i + 1}", tasks=4)
            for i in range(3)
        ]
        runs = [supervise(folder) for folder in folders]
        loads = [
            Load(urls[i], scaled(6, 200), prefix=f"L{i}", seed=i) for i in (1, 2)
        ]  # the load goes to the replicas, which stay (or come back) at their ports
        for load in loads:
            load.start()
        killed: list[str] = []
        try:
            for _ in range(scaled(1, 3)):
                killed += one_round(everyone, runs, folders, tmp_path)
            for load in loads:
                load.join(timeout=300)
            wait_all_ended(urls[0], timeout=scaled(120, 900))
            paused = set().union(*(load.paused for load in loads))
            check_invariants(db_url, paused=paused, all_ended=False)
            for load in loads:
                load.resume_all(time.monotonic() + 60)
            wait_all_ended(urls[0], timeout=scaled(90, 600))
        finally:
            codes = [run.stop() for run in runs]
            for plane in everyone:
                if plane.served is not None and plane.served.process.poll() is None:
                    plane.stop()
        assert codes == [0, 0, 0], "\n\n".join("\n".join(run.lines[-12:]) for run in runs)
        assert [outbox_count(folder) for folder in folders] == [0, 0, 0]
        figures = check_invariants(db_url)
        assert figures.tokens == sum(load.tokens for load in loads)
        check_timers(db_url)
    figures.duplicates_answered = sum(load.duplicates for load in loads)
    figures.faults = len(killed)
    supervisor_figures(figures, *runs)
    figures.write("replicas_sigkill")
