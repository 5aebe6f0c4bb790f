"""`stateous demo` as a real process: the histories of the getting-started walkthrough."""

from __future__ import annotations

import re
import subprocess
import sys

from stateous.cli.demo import titles

T = r"\d\d:\d\d:\d\d  "
N = r"\d+"
WHO = r"\S+"

# ORDER-1 and ORDER-3 (approved): the 14 lines of the getting-started walkthrough; task ids depend
# on the order in which the supervisor claimed the three tokens' tasks, so they are matched as
# numbers.
APPROVED = [
    "#1  started",
    "#2  __started__ in START",
    "#3  entered draft",
    f"#4  task ({N}) queued for draft",
    f"#5  {WHO} took task ({N}) \\(attempt 1\\)",
    "#6  submitted in draft",
    f"#7  task ({N}) done",
    "#8  entered review",
    f"#9  task ({N}) queued for review",
    f"#10  {WHO} took task ({N}) \\(attempt 1\\)",
    "#11  context changed: verdict",
    '#12  reviewed in review: \\{"approved": true, "note": ""\\}',
    f"#13  task ({N}) done",
    "#14  completed",
]
REJECTED = [
    *APPROVED[:11],
    '#12  reviewed in review: \\{"approved": false, "note": ""\\}',
    f"#13  task ({N}) done",
    "#14  entered draft \\(visit 2\\)",
    f"#15  task ({N}) queued for draft",
    f"#16  {WHO} took task ({N}) \\(attempt 1\\)",
    "#17  the review sent this order back: a person must change it",
    f"#18  task ({N}) waits: the work goes on outside",
]


def check_history(lines: list[str], patterns: list[str]) -> None:
    """Each line matches its pattern (after the local time), and task ids pair up."""
    assert len(lines) == len(patterns), lines
    tasks: list[str] = []
    for line, pattern in zip(lines, patterns, strict=True):
        found = re.fullmatch(T + pattern, line)
        assert found is not None, (line, pattern)
        tasks.extend(found.groups())
    # Each visit's task is queued, taken and ended under one id, and each visit has its own.
    visits = [tasks[i : i + 3] for i in range(0, len(tasks), 3)]
    assert all(len(set(visit)) == 1 for visit in visits), tasks
    assert len({visit[0] for visit in visits}) == len(visits), tasks


def test_the_titles() -> None:
    assert titles(1) == ["order 1"]
    assert titles(3) == ["order 1", "reject me", "order 3"]


def test_the_demo_prints_the_histories_and_stops() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "demo"], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    blocks = done.stdout.split("\n\n")
    assert len(blocks) == 3, done.stdout
    first, second, third = (block.strip("\n").splitlines() for block in blocks)
    assert first[0] == "ORDER-1: review, completed"
    check_history(first[1:], APPROVED)
    assert second[0] == "ORDER-2: draft (visit 2), active"
    check_history(second[1:], REJECTED)
    assert third[0] == "ORDER-3: review, completed"
    check_history(third[1:], APPROVED)
    assert done.stderr.splitlines()[-1] == "demo: stopped"
    assert "Traceback" not in done.stderr
