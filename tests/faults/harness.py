"""The fault-injection harness: scale, supervisor folders with flaky routines, a load driver,
real `serve`/`supervise` processes that may be killed, and the whole-database invariant check.

`STATEOUS_FAULTS=short` (the default, run by `make test`) keeps each test to seconds;
`STATEOUS_FAULTS=long` (`make faults`) runs the figures of docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Set
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from tests.support.processes import (
    ROOT,
    ServeProcess,
    Supervise,
    start_serve,
    start_supervise,
    until_ready,
)

LONG = os.environ.get("STATEOUS_FAULTS", "short").strip().lower() == "long"
SDLC_GRAPH = ROOT / "examples" / "sdlc" / "build" / "sdlc.json"
REPORT_FILE = Path(
    os.environ.get("STATEOUS_FAULTS_REPORT", ROOT / "tests" / "faults" / "last-long-run.jsonl")
)

#: Short leases and a fast clock, so that crashes are recovered from within seconds.
SERVE_ENV = {
    "STATEOUS_LEASE_SECONDS": "3",
    "STATEOUS_TICK_SECONDS": "0.2",
    "STATEOUS_SINCE_SECONDS": "0.5",
    "STATEOUS_HOLD_LAPSE_SECONDS": "2",
    "STATEOUS_STOP_WAIT_SECONDS": "1",
}
SUPERVISE_ENV = {
    "STATEOUS_SUPERVISOR_HEARTBEAT": "0.5",
    "STATEOUS_SUPERVISOR_IDLE": "0.1",
    "STATEOUS_SUPERVISOR_MAX_RETRY": "0.3",
    "STATEOUS_SUPERVISOR_WAIT": "0.5",
}
ENDED = ("completed", "failed", "cancelled")
#: The refusal envelope of a request the database cannot take now (503, docs/reference/http-api.md).
BUSY = {"error": "the database cannot take this request now; try again", "code": "database_busy"}
OPEN_TASK = ("queued", "claimed", "waiting")


def scaled(short: int, long: int) -> int:
    """`long` under STATEOUS_FAULTS=long, else `short`."""
    return long if LONG else short


# Routines of the sdlc workflow that fail, stall, write memory and notes, chosen per attempt by a
# hash, so a rerun after a crash may take another path (as a real routine would).
ROUTINES = '''"""Flaky routines of the sdlc workflow, for the fault-injection suite."""

import asyncio
import hashlib

from stateous import on_state

from contract import Tests, TicketContext, events, states


# Tokens whose id starts with SLOW take ten times longer in each routine (up to 2.5 s).
SLOW = ""


def roll(*parts: object) -> int:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()
    return int(digest[:8], 16) % 100


def pace(ctx: TicketContext) -> float:
    return 40 if SLOW and ctx.token.startswith(SLOW) else 400


@on_state(states.coding)
async def coding(ctx: TicketContext) -> events.done | events.stuck:
    ctx.memory["tries"] = ctx.memory.get("tries", 0) + 1
    ctx.note(f"coding attempt {ctx.attempt}")
    await asyncio.sleep(roll(ctx.token, ctx.visit, ctx.attempt, "t") / pace(ctx))
    chance = roll(ctx.token, ctx.visit, ctx.attempt)
    if chance < 25:
        raise RuntimeError("the agent gave up")
    if chance < 30:
        return events.stuck()
    return events.done()


@on_state(states.testing)
async def testing(ctx: TicketContext) -> events.passed | events.failed:
    await asyncio.sleep(roll(ctx.token, ctx.visit, "t") / pace(ctx))
    if roll(ctx.token, ctx.visit) < 60:
        return events.passed(Tests(passed=3, failed=0))
    return events.failed(Tests(passed=2, failed=1))
'''


def make_folder(
    parent: Path,
    url: str,
    name: str,
    *,
    tasks: int = 8,
    extra: str = "",
    slow: str = "",
    contract: str | None = None,
) -> Path:
    """A supervisor folder of the sdlc workflow with the flaky routines, speaking to `url`;
    the routines of tokens whose id starts with `slow` (when given) take ten times longer.
    `contract`: the text of its contract.py (default: the example's, of sdlc.json)."""
    folder = parent / name
    folder.mkdir()
    if contract is None:
        shutil.copy(ROOT / "examples" / "sdlc-supervisor" / "contract.py", folder / "contract.py")
    else:
        (folder / "contract.py").write_text(contract, encoding="utf-8")
    routines = ROUTINES.replace('SLOW = ""', f"SLOW = {slow!r}")
    (folder / "routines.py").write_text(routines, encoding="utf-8")
    (folder / "stateous.yaml").write_text(
        f"url: {url}\nname: {name}\ntasks: {tasks}\n{extra}", encoding="utf-8"
    )
    return folder


def supervise(folder: Path, **env: str) -> Supervise:
    """`stateous supervise FOLDER` with the fault suite's short timings."""
    return start_supervise(folder, env={**SUPERVISE_ENV, **env})


def outbox_count(folder: Path) -> int:
    """How many messages the folder's outbox still holds (0 when it has no outbox)."""
    path = folder / ".stateous" / "outbox.db"
    if not path.exists():
        return 0
    with closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT count(*) FROM messages").fetchone()[0])


@dataclass
class Plane:
    """A `stateous serve` of the sdlc graph on a fixed port, which a test may kill and restart."""

    db_url: str
    port: int
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)
    served: ServeProcess | None = None
    starts: int = 0
    file_limit: int | None = None  # bytes; the largest file the process may write
    graph: Path = SDLC_GRAPH  # the graph file it serves (maybe another version)

    @property
    def url(self) -> str:
        """The fixed base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> ServeProcess:
        """Start serve and wait until it answers (a SQLite hold may take its lapse to free);
        RuntimeError, the process killed, when it does not."""
        served = until_ready(ServeProcess(url="", process=self._popen()), timeout)
        self.served = served
        self.starts += 1
        return served

    def _popen(self) -> subprocess.Popen[str]:
        return start_serve(
            self.graph,
            self.db_url,
            listen=f"127.0.0.1:{self.port}",
            env={**SERVE_ENV, **self.env},
            cwd=self.cwd,
            file_limit=self.file_limit,
        )

    def start_retrying(self, timeout: float = 60.0) -> ServeProcess:
        """Start, again and again while the last holder's hold has not lapsed yet."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.start(timeout=max(1.0, deadline - time.monotonic()))
            except RuntimeError as exc:
                if "another control plane serves" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def kill(self) -> None:
        """SIGKILL, as a crash or a power cut."""
        if self.served is not None:
            self.served.kill()

    def stop(self) -> int:
        """Ctrl-C and the exit code (SIGKILL after 20 s)."""
        assert self.served is not None
        return self.served.stop(timeout=20)

    def close_pipes(self) -> None:
        """Close the child's pipes (the process has ended)."""
        if self.served is not None:
            self.served.close_pipes()


@contextmanager
def plane(db_url: str, port: int, cwd: Path, **env: str) -> Iterator[Plane]:
    """A started Plane, stopped (or killed) at the end."""
    running = Plane(db_url, port, cwd, env)
    running.start_retrying()
    try:
        yield running
    finally:
        if running.served is not None and running.served.process.poll() is None:
            running.stop()


def call(method: str, url: str, *, deadline: float, **kwargs: Any) -> httpx.Response:
    """An HTTP call that tries again while the control plane is down or answers 503."""
    while True:
        try:
            answer = httpx.request(method, url, timeout=10, **kwargs)
            if answer.status_code != 503:
                return answer
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{method} {url}: no answer in time")
        time.sleep(0.2)


@dataclass
class Load:
    """Starts tokens, fires duplicate keyed events and pauses/resumes some, in a thread."""

    url: str
    tokens: int
    prefix: str = "T"
    seed: int = 7
    paused: set[str] = field(default_factory=set)
    keyed: set[str] = field(default_factory=set)
    duplicates: int = 0
    _thread: threading.Thread | None = None
    errors: list[str] = field(default_factory=list)

    def names(self) -> list[str]:
        """Every token id of this load."""
        return [f"{self.prefix}-{n}" for n in range(1, self.tokens + 1)]

    def start(self) -> None:
        """Begin in the background."""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        """Wait for every start to be made."""
        assert self._thread is not None
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the load did not finish starting its tokens"
        assert not self.errors, self.errors

    def _run(self) -> None:
        # Four callers at once: starts, fires and pauses race with the supervisors' reports.
        deadline = time.monotonic() + 300
        with ThreadPoolExecutor(4) as pool:
            for error in pool.map(lambda name: self._guarded(name, deadline), self.names()):
                if error:
                    self.errors.append(error)

    def _guarded(self, name: str, deadline: float) -> str | None:
        try:
            self._one(random.Random(f"{self.seed}:{name}"), name, deadline)
        except AssertionError as exc:  # kept for join() to report
            return str(exc)
        return None

    def _one(self, pick: random.Random, name: str, deadline: float) -> None:
        answer = call(
            "POST",
            f"{self.url}/tokens",
            deadline=deadline,
            json={"token": name, "context": {"repo": f"r/{name}"}},
        )
        assert answer.status_code in (200, 201), answer.text
        roll = pick.random()
        if roll < 0.1:
            # The same keyed event twice: it applies once, the second is a duplicate.
            self.keyed.add(name)
            for _ in range(2):
                fired = call(
                    "POST",
                    f"{self.url}/tokens/{name}/events/stuck",
                    deadline=deadline,
                    headers={"Idempotency-Key": f"k-{name}"},
                )
                if fired.status_code == 200 and fired.json().get("duplicate"):
                    self.duplicates += 1
        elif roll < 0.2:
            paused = call("POST", f"{self.url}/tokens/{name}/pause", deadline=deadline)
            if paused.status_code == 200:
                self.paused.add(name)

    def resume_all(self, deadline: float) -> None:
        """Resume the paused tokens (after the invariant on them was checked)."""
        for name in sorted(self.paused):
            call("POST", f"{self.url}/tokens/{name}/resume", deadline=deadline)

    def run_out(self, url: str, *, while_paused: Callable[[], object] | None = None) -> None:
        """Wait until every start is made and every token not paused has ended (through `url`);
        call `while_paused()` (a check of the paused tokens); resume them and wait for their
        ends too."""
        self.join(timeout=300)
        wait_all_ended(url, timeout=scaled(90, 900))
        if while_paused is not None:
            while_paused()
        self.resume_all(time.monotonic() + 60)
        wait_all_ended(url, timeout=scaled(60, 600))


def live_tokens(url: str, deadline: float) -> int:
    """How many tokens are active (waits through restarts)."""
    answer = call(
        "GET", f"{url}/tokens", deadline=deadline, params={"status": "active", "limit": "1000"}
    )
    return len(answer.json())


def wait_all_ended(url: str, timeout: float, during: Callable[[], None] | None = None) -> None:
    """Wait until no token is active, calling `during()` (a fault) on each round."""
    deadline = time.monotonic() + timeout
    while live_tokens(url, deadline):
        if during is not None:
            during()
        if time.monotonic() > deadline:
            raise AssertionError("tokens are still active at the deadline")
        time.sleep(0.3)


# ---------------------------------------------------------------------------------------------
# The invariants, over the whole database.


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


@dataclass
class Figures:
    """What a run did, for docs/reliability.md."""

    tokens: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    claims: int = 0
    failed_attempts: int = 0
    reports_applied: int = 0
    duplicates_answered: int = 0
    faults: int = 0
    retried_calls: int = 0
    refused_late_reports: int = 0
    outbox_resent: int = 0

    def write(self, name: str) -> None:
        """Append one JSON line to the report file of a long run (for the reliability page)."""
        if not LONG:
            return
        line = {"test": name, "mode": "long" if LONG else "short", **self.__dict__}
        with REPORT_FILE.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


def check_invariants(
    db_url: str, *, paused: Set[str] = frozenset(), all_ended: bool = True
) -> Figures:
    """Assert every invariant of the engine over the whole database; answer its figures."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            tokens = {r.token: r for r in conn.execute(text("SELECT * FROM tokens"))}
            tasks = list(conn.execute(text("SELECT * FROM tasks ORDER BY id")))
            timers = list(conn.execute(text("SELECT * FROM timers")))
            memory = list(conn.execute(text("SELECT * FROM memory")))
            rows = list(
                conn.execute(
                    text("SELECT token, seq, kind, key, data FROM ledger ORDER BY token, seq")
                )
            )
    finally:
        engine.dispose()
    ledger: dict[str, list[tuple[int, str, str | None, Any]]] = defaultdict(list)
    for r in rows:
        ledger[r.token].append((r.seq, r.kind, r.key, _json(r.data)))
    figures = Figures(tokens=len(tokens))
    problems: list[str] = []
    _check_ledgers(tokens, ledger, paused, problems, figures)
    _check_tasks(tokens, tasks, problems)
    _check_ended(tokens, tasks, timers, memory, problems)
    _check_claims(ledger, problems, figures)
    for row in tokens.values():
        if all_ended and row.status not in ENDED:
            problems.append(f"{row.token} is {row.status} at the end")
        if row.status in ENDED:
            setattr(figures, row.status, getattr(figures, row.status) + 1)
    assert not problems, "invariants broken:\n" + "\n".join(problems[:50])
    return figures


def _check_ledgers(
    tokens: dict[str, Any],
    ledger: dict[str, list[tuple[int, str, str | None, Any]]],
    paused: Set[str],
    problems: list[str],
    figures: Figures,
) -> None:
    for name, entries in ledger.items():
        if name not in tokens:
            problems.append(f"ledger rows of an unknown token {name}")
        seqs = [seq for seq, *_ in entries]
        if seqs != list(range(1, len(seqs) + 1)):
            problems.append(f"{name}: ledger seq not contiguous: {seqs[:20]}")
        keys = [key for _, _, key, _ in entries if key is not None]
        if len(keys) != len(set(keys)):
            problems.append(f"{name}: an idempotency key applied twice: {keys}")
        _check_moves(name, entries, tokens.get(name), paused, problems, figures)


def _check_moves(
    name: str,
    entries: list[tuple[int, str, str | None, Any]],
    token: Any,
    paused: Set[str],
    problems: list[str],
    figures: Figures,
) -> None:
    """Paused tokens do not move; each task is done once; the token row matches its ledger."""
    is_paused = False
    done: Counter[int] = Counter()
    entered: tuple[str, int] | None = None
    ends = 0
    for seq, kind, _key, data in entries:
        is_paused = _paused_after(name, seq, kind, is_paused, problems)
        if kind == "entered":
            entered = (data["state"], data["visit"])
        if kind in ("task_done", "task_cancelled"):
            done[data["task"]] += 1
        figures.reports_applied += kind == "event_accepted" and data["event"] != "__started__"
        ends += kind in ("completed", "failed", "cancelled")
    for task, count in done.items():
        if count > 1:
            problems.append(f"{name}: task {task} ended {count} times")
    if ends > 1:
        problems.append(f"{name}: ended {ends} times")
    if token is not None and entered is not None and (token.state, token.visit) != entered:
        problems.append(f"{name}: row at {(token.state, token.visit)}, ledger at {entered}")
    if token is not None and name in paused and token.status == "paused" and not is_paused:
        problems.append(f"{name}: the row is paused but the ledger is not")


def _paused_after(name: str, seq: int, kind: str, is_paused: bool, problems: list[str]) -> bool:
    """Whether the token is paused after this row; a move while paused is a problem."""
    if kind in ("entered", "event_accepted", "completed") and is_paused:
        problems.append(f"{name}: {kind} at seq {seq} while paused")
    if kind == "paused":
        return True
    return False if kind == "resumed" else is_paused


def _check_tasks(tokens: dict[str, Any], tasks: list[Any], problems: list[str]) -> None:
    """One open task per active visit; none for another visit."""
    open_by_token: dict[str, list[Any]] = defaultdict(list)
    for task in tasks:
        if task.status in OPEN_TASK:
            open_by_token[task.token].append(task)
        if task.status == "claimed" and (task.claimed_by is None or task.lease_until is None):
            problems.append(f"task {task.id} is claimed without a holder or a lease")
    for name, row in tokens.items():
        open_tasks = open_by_token.get(name, [])
        if row.status not in ("active", "paused"):
            continue
        if len(open_tasks) > 1:
            problems.append(f"{name}: {len(open_tasks)} open tasks")
        for task in open_tasks:
            if (task.state, task.visit) != (row.state, row.visit):
                problems.append(f"{name}: open task {task.id} of another visit")
        if row.status == "active" and row.state != "__start__" and len(open_tasks) != 1:
            problems.append(f"{name}: active at {row.state} without an open task")


def _check_ended(
    tokens: dict[str, Any],
    tasks: list[Any],
    timers: list[Any],
    memory: list[Any],
    problems: list[str],
) -> None:
    """An ended token has no pending timer, no open task and no memory."""
    ended = {name for name, row in tokens.items() if row.status in ENDED}
    for task in tasks:
        if task.token in ended and task.status in OPEN_TASK:
            problems.append(f"ended {task.token} has open task {task.id}")
    for timer in timers:
        if timer.token in ended and timer.status == "pending":
            problems.append(f"ended {timer.token} has a pending timer {timer.id}")
    for item in memory:
        if item.token in ended:
            problems.append(f"ended {item.token} has memory {item.key!r}")


def _check_claims(
    ledger: dict[str, list[tuple[int, str, str | None, Any]]], problems: list[str], figures: Figures
) -> None:
    """No attempt of a task was claimed twice (so never held by two supervisors)."""
    claimed: Counter[tuple[int, int]] = Counter()
    for entries in ledger.values():
        for _, kind, _, data in entries:
            if kind == "task_claimed":
                claimed[(data["task"], data["attempt"])] += 1
            elif kind == "task_failed":
                figures.failed_attempts += 1
    figures.claims = sum(claimed.values())
    for (task, attempt), count in claimed.items():
        if count > 1:
            problems.append(f"task {task} attempt {attempt} claimed {count} times")


def supervisor_figures(figures: Figures, *runs: Supervise) -> None:
    """Add what the supervisors' logs say: calls tried again, late reports refused, resends."""
    for run in runs:
        for message in run.messages():
            if "trying again in" in message:
                figures.retried_calls += 1
            elif "refused the report" in message:
                figures.refused_late_reports += 1
            elif message.startswith("sending ") and "left in the outbox" in message:
                figures.outbox_resent += int(message.split()[1])


def failures(lines: list[str]) -> list[str]:
    """The serve's `500`s (logged `failed unexpectedly`) and tracebacks, with the lines after."""
    found: list[str] = []
    for n, line in enumerate(lines):
        if "failed unexpectedly" in line or line.startswith("Traceback"):
            found.extend(lines[n : n + 40])
    return found


def odd_answers(messages: list[str]) -> list[str]:
    """The supervisor's calls that were answered with anything but `503 database_busy`."""
    answered = (re.search(r"\(it answered (\d+[^:)]*)", m) for m in messages)
    return [found[1] for found in answered if found and found[1] != "503, database_busy"]


@dataclass
class AnswerProbe:
    """Reads and starts tokens in a background thread during an outage, keeping every answer
    that is not a success or `503 database_busy`. A test's probe decides when to ask (`_run`)."""

    url: str
    answers: Counter[str] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)
    started: set[str] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        """Begin in the background."""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the probing."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _run(self) -> None:
        raise NotImplementedError

    def _ask(self, http: httpx.Client, method: str, path: str, **kwargs: Any) -> int:
        """One call; answers its status (0 when the server did not answer)."""
        try:
            answer = http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            self.answers["no answer"] += 1
            self.wrong.append(f"{method} {path}: {exc!r}")  # serve stopped or hung
            return 0
        status = answer.status_code
        if status == 503 and answer.json() == BUSY:
            self.answers["503 database_busy"] += 1
        else:
            self.answers[str(status)] += 1
            if status not in (200, 201):
                self.wrong.append(f"{method} {path}: {status} {answer.text}")
        return status
