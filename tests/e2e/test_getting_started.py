"""The getting-started walkthrough with real processes.

`stateous init workflow orders`, `stateous serve`, `stateous init supervisor orders/flow.py
orders-supervisor` with the tutorial's routines, `stateous supervise`, then the token commands;
ORDER-1's rows in the database are those docs/data.md shows, and ORDER-2's history is checked
line by line. The control plane listens on a free port instead of 8080.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.integration.supervisor.procs import wait_until
from tests.support import serve_process, sqlite_url, start_supervise

ROOT = Path(__file__).resolve().parents[2]
TIME = re.compile(r"^\d\d:\d\d:\d\d  ")

ORDER_1_LEDGER = [
    ("started", {"context": {"title": "first order", "verdict": None}}),
    ("event_accepted", {"event": "__started__", "payload": None, "state": "__start__"}),
    ("entered", {"state": "draft", "visit": 1}),
    ("task_queued", {"task": 1, "state": "draft"}),
    ("task_claimed", {"task": 1, "supervisor": "build-box-1", "attempt": 1}),
    ("event_accepted", {"event": "submitted", "payload": None, "state": "draft"}),
    ("task_done", {"task": 1}),
    ("entered", {"state": "review", "visit": 1}),
    ("task_queued", {"task": 2, "state": "review"}),
    ("task_claimed", {"task": 2, "supervisor": "build-box-1", "attempt": 1}),
    ("context_changed", {"keys": ["verdict"]}),
    (
        "event_accepted",
        {"event": "reviewed", "payload": {"approved": True, "note": ""}, "state": "review"},
    ),
    ("task_done", {"task": 2}),
    ("completed", {}),
]

ORDER_2_HISTORY = [
    "#1  started",
    "#2  __started__ in START",
    "#3  entered draft",
    "#4  task 3 queued for draft",
    "#5  build-box-1 took task 3 (attempt 1)",
    "#6  submitted in draft",
    "#7  task 3 done",
    "#8  entered review",
    "#9  task 4 queued for review",
    "#10  build-box-1 took task 4 (attempt 1)",
    "#11  context changed: verdict",
    '#12  reviewed in review: {"approved": false, "note": ""}',
    "#13  task 4 done",
    "#14  entered draft (visit 2)",
    "#15  task 5 queued for draft",
    "#16  build-box-1 took task 5 (attempt 1)",
    "#17  the review sent this order back: a person must change it",
    "#18  task 5 waits: the work goes on outside",
]


def stateous(*args: str, cwd: Path, url: str | None = None) -> list[str]:
    """Run a command that must succeed with nothing on stderr; its stdout lines."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if url is not None:
        env["STATEOUS_URL"] = url
    done = subprocess.run(
        [sys.executable, "-m", "stateous", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout.splitlines()


def shown(lines: list[str]) -> list[str]:
    """History lines with their time checked and cut off."""
    for line in lines[1:]:
        assert TIME.match(line), line
    return [lines[0], *(TIME.sub("", line) for line in lines[1:])]


def test_getting_started(tmp_path: Path) -> None:
    assert stateous("init", "workflow", "orders", cwd=tmp_path)[-1] == (
        "  stateous init supervisor orders/flow.py orders-supervisor"
    )
    db = tmp_path / "stateous.db"
    with serve_process(
        tmp_path / "orders" / "build" / "orders.json", sqlite_url(tmp_path), cwd=tmp_path
    ) as plane:
        assert stateous(
            "init", "supervisor", "orders/flow.py", "orders-supervisor", cwd=tmp_path
        ) == [
            "wrote    orders-supervisor/contract.py",
            "wrote    orders-supervisor/draft.py",
            "wrote    orders-supervisor/review.py",
            "wrote    orders-supervisor/stateous.yaml",
            "wrote    orders-supervisor/pyproject.toml",
            "",
            "Write the routines, then run: stateous supervise orders-supervisor",
        ]
        folder = tmp_path / "orders-supervisor"
        for name in ("draft.py", "review.py"):
            shutil.copy(ROOT / "examples" / "orders-supervisor" / name, folder / name)
        yaml = (folder / "stateous.yaml").read_text()
        yaml = yaml.replace("http://127.0.0.1:8080", plane.url).replace("# name:", "name:")
        (folder / "stateous.yaml").write_text(yaml, encoding="utf-8")
        running = start_supervise(folder)
        try:
            assert running.wait_for("serves") == (
                f"build-box-1 serves draft, review; the control plane is {plane.url}"
            )
            url = plane.url
            start = stateous(
                "token", "start", "ORDER-1", '{"title": "first order"}', cwd=tmp_path, url=url
            )
            assert start == ["ORDER-1: draft, active"]
            wait_until(
                lambda: (
                    stateous("token", "show", "ORDER-1", cwd=tmp_path, url=url)[0]
                    == "ORDER-1: review, completed"
                ),
                what="ORDER-1 to complete",
            )
            lines = shown(stateous("token", "show", "ORDER-1", cwd=tmp_path, url=url))
            assert len(lines) == 15 and lines[11:] == [
                "#11  context changed: verdict",
                '#12  reviewed in review: {"approved": true, "note": ""}',
                "#13  task 2 done",
                "#14  completed",
            ]
            start = stateous(
                "token", "start", "ORDER-2", '{"title": "reject me"}', cwd=tmp_path, url=url
            )
            assert start == ["ORDER-2: draft, active"]
            running.wait_for("^task 5 of ORDER-2: reported waiting$")
            lines = shown(stateous("token", "show", "ORDER-2", cwd=tmp_path, url=url))
            assert lines == ["ORDER-2: draft (visit 2), active", *ORDER_2_HISTORY]
            cancel = stateous("token", "cancel", "ORDER-2", cwd=tmp_path, url=url)
            assert cancel == ["ORDER-2: draft (visit 2), cancelled"]
            lines = shown(stateous("token", "show", "ORDER-2", cwd=tmp_path, url=url))
            assert lines[-2:] == ["#19  task 5 cancelled", "#20  cancelled"]
        finally:
            assert running.stop() == 0
        messages = running.messages()
        # A task's report is logged once the outbox forgets it, so the next grant can come first.
        assert sorted(messages[1:-1]) == sorted(
            [
                "task 1: draft of ORDER-1, attempt 1",
                "task 1 of ORDER-1: reported submitted",
                "task 2: review of ORDER-1, attempt 1",
                "task 2 of ORDER-1: reported reviewed",
                "task 3: draft of ORDER-2, attempt 1",
                "task 3 of ORDER-2: reported submitted",
                "task 4: review of ORDER-2, attempt 1",
                "task 4 of ORDER-2: reported reviewed",
                "task 5: draft of ORDER-2, attempt 1",
                "task 5 of ORDER-2: reported waiting",
            ]
        )
        for task in range(1, 6):
            started = next(i for i, m in enumerate(messages) if m.startswith(f"task {task}: "))
            reported = next(i for i, m in enumerate(messages) if m.startswith(f"task {task} of "))
            assert started < reported
        assert messages[-1] == (
            "stopping: no new tasks; waiting for 0 routine(s) (signal again to stop now)"
        )
    assert plane.process.returncode == 0 and plane.lines[-1] == "stopped"
    check_rows(db, folder)


def check_rows(db: Path, folder: Path) -> None:
    """ORDER-1's documented rows, the last claim, and the empty outbox."""
    conn = sqlite3.connect(db)
    try:
        ledger = conn.execute(
            "SELECT seq, kind, key, data FROM ledger WHERE token = 'ORDER-1' ORDER BY seq"
        ).fetchall()
        assert [(seq, kind, key, json.loads(data)) for seq, kind, key, data in ledger] == [
            (i, kind, None, data) for i, (kind, data) in enumerate(ORDER_1_LEDGER, start=1)
        ]
        token = conn.execute(
            "SELECT state, status, visit, context, parent, workflow FROM tokens WHERE token = 'ORDER-1'"
        ).fetchone()
        assert token[:3] == ("review", "completed", 1)
        assert json.loads(token[3]) == {
            "title": "first order",
            "verdict": {"approved": True, "note": ""},
        }
        assert token[4:] in ((None, None), ("", ""))
        tasks = conn.execute(
            "SELECT id, state, visit, status, attempt, claimed_by, lease_until FROM tasks "
            "WHERE token = 'ORDER-1' ORDER BY id"
        ).fetchall()
        assert tasks == [
            (1, "draft", 1, "done", 1, "build-box-1", None),
            (2, "review", 1, "done", 1, "build-box-1", None),
        ]
        (claim,) = conn.execute(
            "SELECT supervisor, request, task_id, attempt FROM claims"
        ).fetchall()
        assert claim[0] == "build-box-1" and re.fullmatch(r"[0-9a-f]{32}", claim[1])
        assert claim[2:] == (None, None)
    finally:
        conn.close()
    outbox = sqlite3.connect(folder / ".stateous" / "outbox.db")
    try:
        assert outbox.execute("SELECT COUNT(*) FROM messages").fetchone() == (0,)
    finally:
        outbox.close()
