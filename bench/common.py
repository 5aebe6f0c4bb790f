"""What every benchmark shares: a fresh folder with the `orders` starter and its supervisor,
real `stateous serve` and `stateous supervise` processes, token starts over HTTP, and reading
the results from the database's ledger (so a figure never depends on a polling interval).

Each script prints exactly one JSON line on stdout; the processes' logs go to files in the
temporary folder, which is removed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import loadgen  # beside this file: every script puts bench/ on the path first
import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

from stateous.model.environment import environment

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the processes start as the tests start them
    sys.path.insert(1, str(ROOT))

from tests.support.processes import Piped, launch_serve, stateous_argv  # noqa: E402  # after the path
from tests.support.processes import start_supervise as start_supervise_process  # noqa: E402

DRAFT_ROUTINE = """\
from stateous import on_state
from contract import ItemContext, events, states


@on_state(states.draft)
def draft(ctx: ItemContext) -> events.submitted:
    return events.submitted()
"""
"""A `draft` routine that returns at once (an `async def` would be just as quick)."""

REVIEW_ROUTINE = """\
from stateous import on_state
from contract import ItemContext, Verdict, events, states


@on_state(states.review)
def review(ctx: ItemContext) -> events.reviewed:
    return events.reviewed(Verdict(approved=True))
"""
"""A `review` routine that approves at once: every token completes after two tasks."""

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=test"
PG_URL = "postgresql://postgres@127.0.0.1:5432/{name}"


#: Added to the environment of the child processes (which are unbuffered): no colour.
QUIET = {"NO_COLOR": "1"}


def machine() -> dict[str, Any]:
    """The machine a figure ran on, and its load just now."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": sys.version.split()[0],
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def emit(line: dict[str, Any]) -> None:
    """Print the benchmark's one JSON line (with the machine and its load)."""
    print(json.dumps({**line, "machine": machine()}), flush=True)


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of `values` (0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[index]


# ------------------------------------------------------------------------------ the folder


def prepare(
    folder: Path,
    tasks: int = 16,
    supervisors: int = 1,
    change: Callable[[Path], None] | None = None,
) -> list[Path]:
    """Write the `orders` starter, compile it, and `supervisors` supervisor folders.

    `change(folder)`, when given, runs before the supervisor folders are written (so their
    contracts are of the graph it leaves in `orders/build/orders.json`).
    """
    run_step(folder, "init", "workflow", "orders")
    if change is not None:
        change(folder)
    made = []
    for n in range(supervisors):
        name = f"sup-{n + 1}"
        run_step(folder, "init", "supervisor", "orders/flow.py", name)
        sup = folder / name
        (sup / "draft.py").write_text(DRAFT_ROUTINE, encoding="utf-8")
        (sup / "review.py").write_text(REVIEW_ROUTINE, encoding="utf-8")
        made.append(sup)
    return made


def configure(supervisor: Path, url: str, tasks: int) -> None:
    """Point a supervisor folder at `url`, with `tasks` routines at once and its own name."""
    (supervisor / "stateous.yaml").write_text(
        f'url: "{url}"\ntasks: {tasks}\nname: {supervisor.name}\n', encoding="utf-8"
    )


def run_step(folder: Path, *args: str) -> None:
    """Run one `stateous` command in `folder`, or exit with its last words."""
    done = subprocess.run(
        stateous_argv(*args),
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **QUIET},
    )
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise SystemExit(f"error: `stateous {' '.join(args)}` failed: {last}")


# ------------------------------------------------------------------------------ databases


@contextlib.contextmanager
def database(kind: str, folder: Path) -> Iterator[str]:
    """A fresh database URL: a SQLite file in `folder`, or a new Postgres database."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'stateous.db'}"
        return
    name = f"stateous_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_URL.format(name=name)
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def reader(db_url: str) -> Engine:
    """An engine that reads the benchmark's database (SQLite reads never block the writer)."""
    if db_url.startswith("postgresql://"):
        db_url = "postgresql+psycopg://" + db_url.removeprefix("postgresql://")
    return create_engine(db_url, pool_size=1) if "postgresql" in db_url else create_engine(db_url)


def id_filter(engine: Engine, prefix: str) -> tuple[str, dict[str, str]]:
    """SQL that keeps the ids starting with `prefix`, and its parameters.

    `LIKE 'prefix%'` alone cannot use SQLite's index: on a database with 100,000 other tokens
    each poll scanned them all and took the bench's own CPU from the processes it measures. On
    SQLite (binary order) the range `[prefix, next prefix)` uses the primary key; Postgres
    compares text by its collation, where that range is not the prefix, so it keeps `LIKE`.
    """
    params = {"p": prefix + "%", "lo": prefix, "hi": prefix[:-1] + chr(ord(prefix[-1]) + 1)}
    if engine.dialect.name == "sqlite":
        return "token >= :lo AND token < :hi AND token LIKE :p", params
    return "token LIKE :p", params


def count_completed(engine: Engine, prefix: str) -> int:
    """How many tokens whose id starts with `prefix` completed."""
    where, params = id_filter(engine, prefix)
    query = text(f"SELECT count(*) FROM tokens WHERE {where} AND status = 'completed'")
    with engine.connect() as conn:
        return int(conn.execute(query, params).scalar_one())


def spans(engine: Engine, prefix: str) -> dict[str, tuple[datetime, datetime]]:
    """Per completed token: the `at` of its `started` and of its `completed` ledger rows (UTC)."""
    where, params = id_filter(engine, prefix)
    query = text(
        f"SELECT token, kind, at FROM ledger WHERE {where} AND kind IN ('started', 'completed')"
    )
    found: dict[str, dict[str, datetime]] = {}
    with engine.connect() as conn:
        for token, kind, at in conn.execute(query, params):
            if isinstance(at, str):
                at = datetime.fromisoformat(at)
            found.setdefault(token, {})[kind] = at.replace(tzinfo=UTC)
    return {t: (k["started"], k["completed"]) for t, k in found.items() if len(k) == 2}


# ------------------------------------------------------------------------------ processes


@dataclass
class Process:
    """A child `stateous` process of tests/support/processes.py, whose stderr goes to its log
    file, and its peak resident memory."""

    name: str
    child: Piped
    url: str = ""
    peak_kib: int = 0
    _watch: threading.Thread | None = field(default=None, repr=False)

    @property
    def popen(self) -> subprocess.Popen[str]:
        """The process."""
        return self.child.process

    def rss_kib(self) -> int:
        """Peak resident set size so far (VmHWM), in KiB; 0 once it ended."""
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    self.peak_kib = max(self.peak_kib, int(line.split()[1]))
        return self.peak_kib

    def watch_memory(self) -> None:
        """Keep reading the peak until the process ends (VmHWM vanishes with the process)."""

        def loop() -> None:
            while self.popen.poll() is None:
                self.rss_kib()
                time.sleep(0.2)

        self._watch = threading.Thread(target=loop, daemon=True)
        self._watch.start()

    def stop(self, timeout: float = 30.0) -> int:
        """Ctrl-C, then kill after `timeout` seconds; answers the exit code."""
        self.rss_kib()
        return self.child.stop(timeout)


def start_serve(folder: Path, db_url: str, *, replica: int = 0) -> Process:
    """`stateous serve orders/build/orders.json` on a free port; waits until it answers.

    `replica` N > 0: the N-th `--replica`, logging to `serve-replica-N.log`.
    """
    log = folder / (f"serve-replica-{replica}.log" if replica else "serve.log")
    try:
        served = launch_serve(
            "orders/build/orders.json", db_url, extra=["--replica"] if replica else [],
            env=QUIET, cwd=folder, log=log, new_session=True, ready_timeout=120,
        )  # fmt: skip
    except RuntimeError as exc:
        raise SystemExit(f"error: {str(exc)[-2000:]}") from None
    return Process("serve", served, served.url)


def start_supervise(supervisor: Path, url: str, tasks: int) -> Process:
    """`stateous supervise FOLDER` (its own timings); waits for its `serves` line."""
    configure(supervisor, url, tasks)
    log = supervisor.parent / f"{supervisor.name}.log"
    running = start_supervise_process(
        supervisor, env=QUIET, new_session=True, log=log, fast=False, log_level=None
    )
    try:
        running.wait_for(" serves ", timeout=60)
    except AssertionError:
        running.kill()
        raise SystemExit(f"error: supervise did not start: {log.read_text()[-2000:]}") from None
    return Process(supervisor.name, running)


@contextlib.contextmanager
def fresh_folder() -> Iterator[Path]:
    """A temporary folder, removed at the end (set STATEOUS_BENCH_KEEP=1 to keep it)."""
    if environment().bench_keep:
        yield Path(tempfile.mkdtemp(prefix="stateous-bench-"))
        return
    with tempfile.TemporaryDirectory(prefix="stateous-bench-") as name:
        yield Path(name)


@contextlib.contextmanager
def stopping(*processes: Process) -> Iterator[None]:
    """Stop the processes at the end, the last started first."""
    try:
        yield
    finally:
        for process in reversed(processes):
            process.stop()


# ------------------------------------------------------------------------------ load


def cpu_seconds(pid: int) -> float:
    """CPU seconds a process used so far: `utime + stime` of `/proc/<pid>/stat`."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    # Fields 14 and 15 of proc(5); fields[0] here is field 3 (the state).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def database_cpu_seconds() -> float:
    """CPU seconds the machine's Postgres processes (every `postgres` process: the backends
    of each connection, the WAL writer, the checkpointer) used so far; 0 with none running."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended between the listing and the read
            continue
        if text[text.index("(") + 1 : text.rindex(")")] == "postgres":
            fields = text[text.rindex(")") + 2 :].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def machine_busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from the first line of /proc/stat."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    total = sum(fields[:8])
    tick = os.sysconf("SC_CLK_TCK")
    return (total - idle) / tick, total / tick


#: The load generators of `start_tokens`: `raw` (bench/loadgen.py, the default) or `httpx`.
CLIENTS = ("raw", "httpx")


def start_tokens(
    url: str | list[str], ids: list[str], concurrency: int = 8, client: str = "raw"
) -> float:
    """Start the tokens over HTTP with `concurrency` keep-alive connections; answers seconds.

    Several URLs (control planes on one database): the connections are spread across them.
    `client` is the load generator: `raw` (bench/loadgen.py, a few tens of microseconds of CPU
    a start) or `httpx` (a thread and a client per connection, about 0.7 ms a start).
    """
    urls = [url] if isinstance(url, str) else url
    bodies = [{"token": token, "context": {"title": "bench"}} for token in ids]
    began = time.perf_counter()
    if client == "raw":
        answers = loadgen.post_many(urls, "/tokens", bodies, concurrency)
        errors = [
            f"{token}: {status} {text.decode(errors='replace')}"
            for token, (status, text) in zip(ids, answers, strict=True)
            if status != 201
        ]
    else:
        errors = _start_with_httpx(urls, bodies, concurrency)
    if errors:
        raise SystemExit(f"error: {len(errors)} start(s) failed, e.g. {errors[0]}")
    return time.perf_counter() - began


def _start_with_httpx(urls: list[str], bodies: list[dict[str, Any]], concurrency: int) -> list[str]:
    """The starts through httpx, a thread and a client per connection; answers the failures."""
    errors: list[str] = []

    def worker(chunk: list[dict[str, Any]], base: str) -> None:
        with httpx.Client(base_url=base, timeout=60) as http:
            for body in chunk:
                answer = http.post("/tokens", json=body)
                if answer.status_code != 201:
                    errors.append(f"{body['token']}: {answer.status_code} {answer.text}")

    chunks = [bodies[n::concurrency] for n in range(concurrency)]
    threads = [
        threading.Thread(target=worker, args=(c, urls[n % len(urls)]))
        for n, c in enumerate(chunks)
        if c
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def wait_completed(engine: Engine, prefix: str, count: int, timeout: float = 600) -> float:
    """Poll the database until `count` tokens of `prefix` completed; answers when (monotonic)."""
    deadline = time.monotonic() + timeout
    while True:
        if count_completed(engine, prefix) >= count:
            return time.monotonic()
        if time.monotonic() > deadline:
            done = count_completed(engine, prefix)
            raise SystemExit(f"error: only {done} of {count} tokens completed in {timeout:.0f} s")
        time.sleep(0.02)
