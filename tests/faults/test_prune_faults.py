"""`stateous prune --export` under faults, against a real `serve` on SQLite and
Postgres: the prune process and `serve` SIGKILLed at random points of a prune, the file cut in
the middle of a line (a full disk while a page was written), and the prune run again, appending
to the same file, until it reports everything pruned.

What must hold, and what may not:

- **Never neither.** After every fault, each token is still in the database or on a whole line
  of the export file (the page is `fsync`ed before its prune is sent).
- **A token may be in the file twice.** A page written, then the prune process or `serve` killed
  before the prune was applied (or its answer lost), is written again by the next run: the file
  holds those tokens twice. That is allowed; what must never happen is a token **doubled after
  import**: `stateous import` into a new database imports each id once and counts the other
  lines as skipped, and each imported token's ledger is its history once.
- **A cut last line** (a crash while a page was written) is left out by `import` with a warning,
  and its tokens are still in the database: they were not pruned, since the prune follows the
  `fsync`. The next run cuts the torn line off before it appends, so the file stays importable.

At the end every id is in exactly one place: the database has none of them (`GET /tokens/{id}`
answers 404 for each), and the imported database has each once.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.e2e.test_prune_import import PENDING
from tests.faults.harness import Plane, check_invariants
from tests.faults.test_bulk_faults import bulk, start_many, wait_job
from tests.support import free_port, sqlite_url
from tests.support.processes import start_piped, stateous_argv

PREFIX = "PR"
#: A seeded run: the same fault schedule each time.
SEED = 95
#: Tokens ended again when a run pruned every token before the faults were all made.
TOP_UP = 500
#: What a round kills, in turn.
WHAT = ("prune", "serve", "both", "serve", "prune")
TORN_ID = re.compile(rb'^\{"token":\{"token":"([^"]+)"')


@dataclass
class Run:
    """The figures of one prune fault run, for docs/reliability.md."""

    tokens: int = 0
    prune_kills: int = 0
    serve_kills: int = 0
    faults: int = 0  # runs with a kill (of the prune, serve or both)
    runs: int = 0
    cut_lines: int = 0
    written_twice: int = 0
    seconds: float = 0.0
    outcomes: Counter[str] = field(default_factory=Counter)


@dataclass
class Scene:
    """The serve, the export file, the tokens ended so far and the prune's cutoff."""

    cp: Plane
    db_url: str
    export: Path
    run: Run
    names: list[str] = field(default_factory=list)
    cutoff: str = ""

    def end_tokens(self, count: int) -> None:
        """Start `count` more tokens, cancel them with one bulk job, and move the cutoff past
        their ends."""
        prefix = f"{PREFIX}{len(self.names) // TOP_UP:02}-"
        start_many(self.cp.url, prefix, count, {})
        job = bulk(self.cp.url, {"action": "cancel", "filter": {"prefix": prefix}})
        assert job["matched"] == count
        final = wait_job(self.cp.url, job["job"], timeout=900, every=0.5)
        assert (final["done"], final["skipped"]) == (count, {})
        self.names += [f"{prefix}{n:05}" for n in range(count)]
        self.run.tokens = len(self.names)
        self.cutoff = iso(datetime.now(UTC) + timedelta(seconds=2))
        time.sleep(2.5)  # every end is now before the cutoff, by the serve's clock too


@pytest.mark.timeout(300)
def test_prune_survives_kills_of_prune_and_serve(db_url: str, tmp_path: Path) -> None:
    run = prune_under_faults(db_url, tmp_path, tokens=500, kills=2)
    assert run.faults == 2
    print(f"\nprune faults: {run}")


@pytest.mark.long
@pytest.mark.timeout(1200)
def test_prune_of_5000_tokens_survives_kills_of_prune_and_serve(
    db_url: str, tmp_path: Path
) -> None:
    run = prune_under_faults(db_url, tmp_path, tokens=5000, kills=8)
    assert run.faults == 8
    print(f"\nprune faults: {run}")


def prune_under_faults(db_url: str, tmp_path: Path, *, tokens: int, kills: int) -> Run:
    """The whole test: end `tokens` tokens, prune them through `kills` faults and a cut line,
    then check every id is in exactly one place."""
    began = time.monotonic()
    scene = Scene(Plane(db_url, free_port(), tmp_path), db_url, tmp_path / "export.jsonl", Run())
    scene.cp.start_retrying()
    try:
        scene.end_tokens(tokens)
        cut_a_line(scene)
        kill_rounds(scene, kills)
        finish(scene)
        nothing_left(scene.cp.url, scene.names)
    finally:
        if scene.cp.served is not None and scene.cp.served.process.poll() is None:
            scene.cp.stop()
    imported_once(scene.export, tmp_path, scene.names, scene.run)
    scene.run.seconds = round(time.monotonic() - began, 1)
    return scene.run


def iso(moment: datetime) -> str:
    """`2026-12-03T17:10:00Z`."""
    return moment.replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def prune(scene: Scene, file_limit: int | None = None) -> subprocess.Popen[str]:
    """`stateous prune --ended-before CUTOFF --export FILE --yes --url URL`, running."""
    argv = stateous_argv(
        "prune", "--ended-before", scene.cutoff, "--export", str(scene.export), "--yes",
        "--url", scene.cp.url,
    )  # fmt: skip
    return start_piped(argv, stdout=subprocess.PIPE, file_limit=file_limit)


def ended(process: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    """Wait for the process: its exit code, stdout and stderr."""
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


# --------------------------------------------------------------------------- the faults


def cut_a_line(scene: Scene) -> None:
    """A prune whose file may grow by 777 bytes only: its first page is cut in the middle of a
    line (as by a crash while it was written). Import leaves the cut line out with a warning,
    and its token is still in the database."""
    export = scene.export
    code, _, err = ended(prune(scene, file_limit=777))
    assert code == 1 and f"error: cannot write {export}" in err, err
    data = export.read_bytes()
    assert len(data) == 777 and not data.endswith(b"\n")
    found = TORN_ID.match(data[data.rfind(b"\n") + 1 :])
    assert found is not None, data[-80:]
    assert found[1].decode() in in_database(scene.db_url), "the token of the cut line was pruned"
    scene.run.cut_lines += 1
    scene.run.runs += 1
    never_neither(scene)
    peek = sqlite_url(export.parent, "peek.db")
    imported = subprocess.run(
        stateous_argv("import", str(export), "--db", peek),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    whole = data.count(b"\n")
    assert imported.returncode == 0, imported.stderr
    pending = f"; {whole:,} {PENDING}" if whole else ""  # the archive never served their graph
    assert (
        imported.stdout
        == f"imported {whole:,} tokens into {peek}, skipped 0 (already there){pending}\n"
    )
    assert f"warning: line {whole + 1:,} of {export} is cut short; left out" in imported.stderr


def kill_rounds(scene: Scene, kills: int) -> None:
    """Run prune again and again, killing it (or serve, or both) at a seeded random moment,
    until `kills` runs had a fault; after each, check no token is lost. When a run pruned every
    token before its fault (a kill after the last page's prune was sent), more tokens end."""
    pick = random.Random(SEED)
    rounds = 0
    while scene.run.faults < kills:
        if not in_database(scene.db_url):
            scene.end_tokens(TOP_UP)
        # What is killed and when take turns (so the short run has a prune killed after a write
        # and a serve killed); the moment within each is the seeded random part.
        one_round(scene, pick, WHAT[rounds % len(WHAT)], after_write=rounds % 2 == 0)
        never_neither(scene)
        rounds += 1
        assert rounds <= kills * 10, "the prune kept ending before its fault"


def one_round(scene: Scene, pick: random.Random, what: str, *, after_write: bool) -> None:
    """One prune run with a fault at a random moment: of its run (from its start, mostly while
    it reads a page), or just after the file grew (between the `fsync` and the prune, or during
    the prune)."""
    delay = pick.uniform(0, 0.1) if after_write else pick.uniform(0.2, 1.5)
    size = scene.export.stat().st_size
    process = prune(scene)
    scene.run.runs += 1
    deadline = time.monotonic() + 120
    while after_write and scene.export.stat().st_size == size and process.poll() is None:
        assert time.monotonic() < deadline, "the prune wrote nothing"
        time.sleep(0.005)
    try:
        process.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        fault(scene, process, what)
    code, out, err = ended(process)
    scene.run.outcomes[outcome(code, out, err)] += 1


def fault(scene: Scene, process: subprocess.Popen[str], what: str) -> None:
    """SIGKILL the prune, serve or both (serve is started again)."""
    scene.run.faults += 1
    if what in ("prune", "both"):
        process.kill()
        scene.run.prune_kills += 1
    if what in ("serve", "both"):
        scene.cp.kill()
        scene.run.serve_kills += 1
        scene.cp.close_pipes()
        scene.cp.start_retrying()


def outcome(code: int, out: str, err: str) -> str:
    """How a prune run ended: `done`, `killed`, or `error` (serve went away under it)."""
    if code == 0:
        assert re.fullmatch(r"pruned [\d,]+ tokens? \(.+ of history\) into .+\n", out), out
        return "done"
    if code < 0:
        return "killed"
    assert code == 1 and err.startswith("error: "), (code, err)
    return "error"


def finish(scene: Scene) -> None:
    """Run prune without faults until a run finds nothing more to prune."""
    for _ in range(5):
        code, out, err = ended(prune(scene))
        scene.run.runs += 1
        assert code == 0, err
        if out == f"pruned 0 tokens (0 B of history) into {scene.export}\n":
            return
    raise AssertionError("prune still found tokens after five runs")


# --------------------------------------------------------------------------- the checks


def in_database(db_url: str) -> set[str]:
    """The ids of the test's tokens in the database (read directly: serve may be down)."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            query = text("SELECT token FROM tokens WHERE token LIKE :p")
            return {row[0] for row in conn.execute(query, {"p": PREFIX + "%"})}
    finally:
        engine.dispose()


def in_file(export: Path) -> Counter[str]:
    """How many whole lines of the file hold each top token (a cut last line is not whole)."""
    found: Counter[str] = Counter()
    with export.open("rb") as lines:
        for line in lines:
            if line.endswith(b"\n"):
                found[json.loads(line)["token"]["token"]] += 1
    return found


def never_neither(scene: Scene) -> None:
    """Every token is in the database or on a whole line of the file."""
    lost = set(scene.names) - in_database(scene.db_url) - set(in_file(scene.export))
    assert not lost, f"{len(lost)} tokens lost, e.g. {sorted(lost)[:5]}"


def nothing_left(url: str, names: list[str]) -> None:
    """The API knows none of the tokens any more."""
    with httpx.Client(base_url=url, timeout=30) as http:
        codes = Counter(http.get(f"/tokens/{name}").status_code for name in names)
    assert codes == Counter({404: len(names)})


def imported_once(export: Path, tmp_path: Path, names: list[str], run: Run) -> None:
    """Import the file into a new SQLite database: each id once, its history once."""
    lines = in_file(export)
    assert set(lines) == set(names)
    assert export.read_bytes().endswith(b"\n")
    run.written_twice = sum(n - 1 for n in lines.values())
    archive = sqlite_url(tmp_path, "archive.db")
    imported = subprocess.run(
        stateous_argv("import", str(export), "--db", archive),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    pending = f"; {len(names):,} {PENDING}" if names else ""
    assert imported.stdout == (
        f"imported {len(names):,} tokens into {archive}, skipped {run.written_twice:,} (already "
        f"there){pending}\n"
    )
    assert imported.stderr == ""
    histories = exported_histories(export)
    engine = create_engine(archive)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT token, count(*) FROM ledger GROUP BY token")).all()
    finally:
        engine.dispose()
    assert dict(rows) == histories
    figures = check_invariants(archive)
    assert (figures.tokens, figures.cancelled) == (len(names), len(names))


def exported_histories(export: Path) -> dict[str, int]:
    """Each exported token's ledger length (the first line of a token written twice)."""
    lengths: dict[str, int] = {}
    with export.open("rb") as lines:
        for line in lines:
            entry = json.loads(line)
            lengths.setdefault(entry["token"]["token"], len(entry["history"]))
    return lengths
