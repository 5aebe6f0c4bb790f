"""The walkthroughs of docs/: changing-a-workflow.md's and schedules.md's "Try it", run command
by command as written, and data.md's rows of ORDER-1, which must be those the README's
walkthrough leaves.

The page is read when the test runs, as test_readme.py reads the README: a `bash` block holds
commands, the `text` block after a command holds what it prints, and a `python` block whose
first line is `# <path>` is a file to write. The walkthrough starts where the README's leaves
off (its control plane and supervisor running in `orders-tour`), which the test sets up first.
`stateous serve` listens on a free port instead of 8080 (a second `serve` first stops the one
running, as the page says to), and what differs from one run to the next (times, checksums) is
compared by its shape.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.e2e.test_readme import (
    DEFAULT_URL,
    Background,
    Walkthrough,
    blocks,
    commands,
    run,
)
from tests.support import free_port

ROOT = Path(__file__).resolve().parents[2]
CHANGING = ROOT / "docs" / "changing-a-workflow.md"
SCHEDULES = ROOT / "docs" / "schedules.md"
#: A slot's token id, as schedules.md shows one (`every-5-min-20261203T2005`).
SLOT_ID = re.compile(r"\bevery-5-min-\d{8}T\d{4}\b")
#: A `sitecustomize` for the schedules walkthrough's `serve`: its clock starts at
#: STATEOUS_WALKTHROUGH_NOW (a few seconds before a slot) instead of now, so that the page's "at
#: the next multiple of five minutes" comes at once. Only the clock the control plane reads moves;
#: the page's commands are run as written.
SHIFTED_CLOCK = """
import os
from datetime import datetime

if os.environ.get("STATEOUS_WALKTHROUGH_NOW"):
    from stateous.control import clock

    _real = clock.SystemClock.now
    _shift = datetime.fromisoformat(os.environ["STATEOUS_WALKTHROUGH_NOW"]) - _real(None)  # type: ignore[arg-type]
    clock.SystemClock.now = lambda self: _real(self) + _shift  # type: ignore[method-assign]
"""
#: What changes from one run to the next, and what it is compared as.
VARYING = [
    (re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b"), "YYYY-MM-DD HH:MM:SS"),
    (re.compile(r"^\d\d:\d\d:\d\d  ", re.MULTILINE), "HH:MM:SS  "),
    (re.compile(r"sha256:[0-9a-f]{8}…"), "sha256:<8 hex>…"),
    (re.compile(r"\b[0-9a-f]{12}\b"), "<12 hex>    "),
]


def section(text: str, title: str) -> str:
    """The Markdown of the section `## title`, to the next `## `."""
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def shape(text: str) -> str:
    """`text` with its times and checksums replaced by their shapes."""
    for pattern, replacement in VARYING:
        text = pattern.sub(replacement, text)
    return text


def _serve(line: str, tour: Walkthrough) -> str:
    """Stop the `serve` that runs (Ctrl-C, as the page says), start this one, and answer its
    lines from `serving on` once the line after it came (or a few seconds passed)."""
    for job in [j for j in tour.running if j.process.args[1] == "serve"]:  # type: ignore[index]
        assert job.stop() == 0
        tour.running.remove(job)
    job = tour.start([*shlex.split(line), "--listen", tour.url.removeprefix("http://")])
    job.wait_for("serving on ")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len(_from_serving(job)) < 2:
        time.sleep(0.05)
    return "".join(f"{found}\n" for found in _from_serving(job))


def _from_serving(job: Background) -> list[str]:
    lines = list(job.lines)
    first = next(i for i, found in enumerate(lines) if found.startswith("serving on "))
    return lines[first:]


def step(line: str, tour: Walkthrough) -> str:
    """One command line of the page, with the control plane's URL the test's."""
    line = line.replace(DEFAULT_URL, tour.url)
    if line.startswith("stateous serve "):
        return _serve(line, tour)
    return run(line, tour)


def readme_left_off(tour: Walkthrough) -> Background:
    """`orders-tour` as the README's walkthrough leaves it: its control plane and supervisor
    running (the README's routines); answers the supervisor."""
    (tour.cwd / "orders-tour").mkdir()
    tour.cwd = tour.cwd / "orders-tour"
    run("stateous init workflow orders", tour)
    _serve("stateous serve orders/build/orders.json", tour)
    run("stateous init supervisor orders/flow.py orders-supervisor", tour)
    for name in ("draft.py", "review.py"):
        shutil.copy(ROOT / "examples" / "orders-supervisor" / name, tour.cwd / "orders-supervisor")
    run("stateous supervise orders-supervisor", tour)
    return tour.running[-1]


def new_tour(folder: Path) -> Walkthrough:
    """A walkthrough in `folder`: this checkout's venv first on PATH, a free port for `serve`."""
    dropped = ("STATEOUS_URL", "VIRTUAL_ENV", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"
    url = f"http://127.0.0.1:{free_port()}"
    return Walkthrough(
        cwd=folder, env={**env, "STATEOUS_URL": url, "PYTHONUNBUFFERED": "1"}, url=url
    )


def test_the_walkthrough_of_changing_a_workflow(tmp_path: Path) -> None:
    tour = new_tour(tmp_path)
    ran: list[str] = []
    try:
        old_supervisor = readme_left_off(tour)
        line = ""
        for language, body in blocks(section(CHANGING.read_text(encoding="utf-8"), "Try it")):
            if language == "bash":
                for line in commands(body):
                    tour.last = step(line, tour)
                    ran.append(line)
            elif language == "text":
                assert shape(tour.last) == shape(tour.expected(body)), line
            elif language == "python":
                first, _, _ = body.partition("\n")
                (tour.cwd / first.removeprefix("# ").strip()).write_text(body, encoding="utf-8")
        older = old_supervisor.wait_for("this supervisor serves an older version")
        # It looks at the version served once a beat: ORDER-3 may be migrated by then.
        live = re.sub(r"runs the [01] live", "runs the N live", older.split(": ", 1)[1])
        assert shape(live) == shape(
            "this supervisor serves an older version (sha256:5d372a02…); new tokens start on "
            "sha256:babb2ce7…; it runs the N live token(s) of its version"
        )
        stops = [job.stop() for job in reversed(tour.running)]
    finally:
        for job in tour.running:
            job.stop()
    assert stops == [0, 0, 0]
    assert "stateous token migrate ORDER-3" in ran
    assert "cp orders-supervisor/draft.py orders-supervisor/review.py orders-supervisor-v2/" in ran


def test_the_rows_of_order_1_in_data_md_are_those_the_walkthrough_leaves() -> None:
    """docs/data.md's ledger table of ORDER-1, read at test time, is the one the getting-started
    walkthrough's real run leaves (tests/e2e/test_getting_started.py checks those rows in the
    database)."""
    import json

    from tests.e2e.test_getting_started import ORDER_1_LEDGER

    text = section(
        (ROOT / "docs" / "data.md").read_text(encoding="utf-8"), "ORDER-1, after it completed"
    )
    rows = [line for line in text.splitlines() if re.match(r"^\| \d+ \|", line)]
    table = []
    for row in rows:
        seq, kind, data = (cell.strip() for cell in row.strip("|").split("|", 2))
        table.append((int(seq), kind, json.loads(data.strip("`"))))
    assert table == [(i, kind, data) for i, (kind, data) in enumerate(ORDER_1_LEDGER, start=1)]


def _slot_coming(seconds: float) -> str:
    """The time, ISO, `seconds` before the next multiple of five minutes that is at least a
    minute away: the clock the schedules walkthrough's `serve` starts at."""
    now = datetime.now(UTC).replace(tzinfo=None, second=0, microsecond=0)
    boundary = now + timedelta(minutes=5 - now.minute % 5)
    if boundary - datetime.now(UTC).replace(tzinfo=None) < timedelta(minutes=1):
        boundary += timedelta(minutes=5)
    return (boundary - timedelta(seconds=seconds)).isoformat()


def _wait_for_the_first_slot(tour: Walkthrough) -> None:
    """Wait until the schedule of the page started its first slot's token."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if "\nlast: -\n" not in run("stateous schedule show every-5-min", tour):
            return
        time.sleep(0.2)
    raise AssertionError("the first slot's token was not started within 60 s")


def test_the_walkthrough_of_schedules(tmp_path: Path) -> None:
    tour = new_tour(tmp_path)
    shifted = tmp_path / "shifted-clock"
    shifted.mkdir()
    (shifted / "sitecustomize.py").write_text(SHIFTED_CLOCK, encoding="utf-8")
    (tour.cwd / "orders-tour").mkdir()
    tour.cwd = tour.cwd / "orders-tour"
    compared = 0
    try:
        run("stateous init workflow orders", tour)
        plain = dict(tour.env)
        tour.env.update(PYTHONPATH=str(shifted), STATEOUS_WALKTHROUGH_NOW=_slot_coming(12))
        _serve("stateous serve orders/build/orders.json", tour)
        tour.env = plain
        slot = ""
        for language, body in blocks(section(SCHEDULES.read_text(encoding="utf-8"), "Try it")):
            if language == "bash":
                lines = commands(body)
                if any(SLOT_ID.search(line) for line in lines):
                    _wait_for_the_first_slot(tour)
                    found = SLOT_ID.search(run("stateous schedule list", tour))
                    assert found is not None
                    slot = found[0]
                tour.last = "".join(run(SLOT_ID.sub(slot, line), tour) for line in lines)
            elif language == "text":
                expected = SLOT_ID.sub("every-5-min-<slot>", tour.expected(body))
                got = SLOT_ID.sub("every-5-min-<slot>", tour.last)
                assert shape(got) == shape(expected)
                compared += 1
        stops = [job.stop() for job in reversed(tour.running)]
    finally:
        for job in tour.running:
            job.stop()
    assert stops == [0]
    assert compared == 2
    assert slot.startswith("every-5-min-")
