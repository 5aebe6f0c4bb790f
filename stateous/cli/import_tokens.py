"""`stateous import FILE [--db URL | --url URL]`: put the tokens of an export file back, as
ended tokens with their history and children exactly as exported, skipping those there already.

With `--db` (the default, `sqlite:///stateous.db`) it writes the database directly, migrating
it first, so an archive opens in a new database of its own; a run that fails removes the
database file it made. With `--url` it sends the entries a page at a time to the control
plane's `POST /import` (an `admin` token), which writes the same rows.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import click
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from stateous.cli.interrupt import finish_first, on_interrupt
from stateous.cli.progress import TOKENS_FIELD, Progress, Update
from stateous.cli.prune import entry_line
from stateous.cli.token import control_plane, wrong_shape
from stateous.cli.where import usage_error
from stateous.control.engine.retention import (
    MOST,
    BadEntry,
    Family,
    ImportCounts,
    Unstorable,
    family_of_entry,
    import_families,
)
from stateous.control.errors import StoreError
from stateous.control.settings import DEFAULT_DB_URL
from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine, mask_url
from stateous.model.errors import StateousError

#: Families written in one transaction (`--db`).
BATCH = 100
#: The most bytes of entries one `POST /import` carries: the API reads at most 1 MiB a body,
#: and the body's own few bytes (`{"tokens":[`, the commas, `by`) need room beside them.
PAGE_BYTES = 1_000_000
#: The files SQLite may make beside a database file.
_SQLITE_SIDES = ("", "-wal", "-shm", "-journal")


@dataclass(frozen=True)
class Line:
    """One export entry of the file: its line number, the JSON object, and where the reading
    is in the file's bytes after it (for the progress bar)."""

    number: int
    entry: Any
    position: int


def _open(path: Path, stack: ExitStack) -> tuple[IO[bytes], IO[bytes]]:
    """The file's raw bytes (their position is the progress) and its lines (gunzipped)."""
    raw = stack.enter_context(path.open("rb"))
    if path.name.endswith(".gz"):
        return raw, cast(IO[bytes], stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb")))
    return raw, raw


def lines(path: Path) -> Iterator[Line]:
    """The export entries of `path`, one a line. A last line cut short (a crash while it was
    written, so before its tokens were pruned) is left out with a warning."""
    with ExitStack() as stack:
        raw, text = _open(path, stack)
        number = 0
        try:
            for number, line in enumerate(text, start=1):  # `number` is read after it
                if not line.strip():
                    continue
                if not line.endswith(b"\n"):
                    _cut_short(path, number)
                    return
                yield Line(number, _json(path, number, line), raw.tell())
        except (EOFError, gzip.BadGzipFile):
            _cut_short(path, number + 1)


def _cut_short(path: Path, number: int) -> None:
    click.echo(f"warning: line {number:,} of {path} is cut short; left out", err=True)


def _not_an_entry(path: Path, number: int, reason: object) -> StateousError:
    return StateousError(f"line {number:,} of {path} is not an export entry: {reason}")


def _json(path: Path, number: int, line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        raise _not_an_entry(path, number, "it is not JSON") from None


def _family(path: Path, line: Line) -> Family:
    try:
        return family_of_entry(line.entry)
    except BadEntry as exc:
        raise _not_an_entry(path, line.number, exc) from None


# ---------------------------------------------------------------- --db


@dataclass
class Done:
    """What an import did so far: its counts, and the last line whose tokens are in."""

    counts: ImportCounts
    line: int = 0


def import_all(store: Store, path: Path, update: Update, done: Done) -> ImportCounts:
    """Import every family of `path`, `BATCH` a transaction (a transaction begun ends before a
    Ctrl-C stops the run)."""
    counts = done.counts
    batch: list[tuple[Line, Family]] = []

    def write() -> None:
        with finish_first(), store.begin() as conn:
            try:
                counts.add(import_families(conn, [family for _, family in batch]))
            except Unstorable as exc:
                number = batch[exc.index][0].number
                raise StateousError(f"line {number:,} of {path}: {exc}") from None
            done.line = batch[-1][0].number
        update(completed=batch[-1][0].position, tokens=counts.imported + counts.skipped)
        batch.clear()

    for line in lines(path):
        batch.append((line, _family(path, line)))
        if len(batch) >= BATCH:
            write()
    if batch:
        write()
    return counts


def _reason(exc: BaseException) -> str:
    return str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]


def _store(db_url: str) -> Store:
    """The database, migrated to the newest schema (a new one is made)."""
    url = mask_url(db_url)
    try:
        store = Store(make_engine(db_url))
        with store.begin() as conn:
            migrate.upgrade(conn)
    except StoreError as exc:
        raise StateousError(f"cannot use the database {url}: {exc.message}") from exc
    except (SQLAlchemyError, ValueError, ImportError, OSError) as exc:
        raise StateousError(f"cannot open the database {url}: {_reason(exc)}") from exc
    return store


def new_files(db_url: str) -> list[Path]:
    """The files of a SQLite database at `db_url` that are not there yet (the run makes them,
    so a run that fails removes them); none for another database."""
    try:
        parsed = make_url(db_url)
    except ArgumentError:
        return []
    name = parsed.database
    if parsed.get_backend_name() != "sqlite" or not name or name == ":memory:":
        return []
    if name.startswith("file:"):  # a URI filename: leave it, whatever it names
        return []
    return [Path(name + side) for side in _SQLITE_SIDES if not Path(name + side).exists()]


def into_database(db_url: str, file: Path, done: Done) -> ImportCounts:
    """`import --db`: migrate (a new database is made), then import; a failure removes the
    files it made, never a database that was there. A Ctrl-C after some tokens went in keeps
    them: the same command goes on."""
    made = new_files(db_url)
    try:
        return _into(db_url, file, done)
    except BaseException as exc:
        if not (isinstance(exc, KeyboardInterrupt) and done.line):
            for path in made:
                path.unlink(missing_ok=True)
        raise


def _into(db_url: str, file: Path, done: Done) -> ImportCounts:
    store = _store(db_url)
    try:
        with Progress("importing", file_size(file), TOKENS_FIELD) as update:
            return import_all(store, file, update, done)
    except SQLAlchemyError as exc:
        raise StateousError(f"cannot import into {mask_url(db_url)}: {_reason(exc)}") from exc
    finally:
        store.engine.dispose()  # before a failed run removes the file


# ---------------------------------------------------------------- --url


def pages(path: Path) -> Iterator[tuple[list[Any], int, int]]:
    """The file's entries in pages of at most `MOST` entries and `PAGE_BYTES` bytes, each with
    the file position and the line number of its last entry; each entry checked here first, so
    a bad line is named by its number before anything of it is sent."""
    page: list[Any] = []
    size = position = number = 0
    for line in lines(path):
        _family(path, line)
        length = len(entry_line(line.entry))  # as httpx sends it: compact, UTF-8, and a comma
        if length > PAGE_BYTES:
            raise StateousError(
                f"line {line.number:,} of {path} is larger than a request to the control plane "
                "may be; import it with --db URL"
            )
        if page and (len(page) >= MOST or size + length > PAGE_BYTES):
            yield page, position, number
            page, size = [], 0
        page.append(line.entry)
        size += length
        position, number = line.position, line.number
    if page:
        yield page, position, number


def file_size(path: Path) -> int:
    """The bytes of `path` (the progress bar's whole)."""
    return path.stat().st_size


def over_http(url: str | None, file: Path, done: Done) -> tuple[ImportCounts, str]:
    """`import --url`: each page to `POST /import` (a page sent is answered before a Ctrl-C
    stops the run); the counts and the URL they went to."""
    counts = done.counts
    size = file_size(file)
    with control_plane(url) as client, Progress("importing", size, TOKENS_FIELD) as update:
        for entries, position, last in pages(file):
            with finish_first():
                counts.add(_counts_of(client.import_tokens(entries), client.url))
                done.line = last
            update(completed=position, tokens=counts.imported + counts.skipped)
        return counts, client.url


def _counts_of(answer: dict[str, Any], url: str) -> ImportCounts:
    names = ("imported", "skipped", "keys_pending")
    if not all(isinstance(answer.get(name), int) for name in names):
        raise wrong_shape(url)
    return ImportCounts(*(int(answer[name]) for name in names))


# ---------------------------------------------------------------- the command


def summary(counts: ImportCounts, target: str) -> str:
    """`imported 3 tokens into sqlite:///stateous.db, skipped 0 (already there)`, and when some
    are of a graph the database has not on record: `; 3 are of a graph this database has not
    served: their search keys are indexed at its first serve`."""
    line = (
        f"imported {counts.imported:,} tokens into {target}, skipped {counts.skipped:,} "
        "(already there)"
    )
    if counts.keys_pending:
        line += (
            f"; {counts.keys_pending:,} are of a graph this database has not served: their "
            "search keys are indexed at its first serve"
        )
    return line


def interrupted_lines(done: Done, target: str, file: Path) -> list[str]:
    """What a Ctrl-C leaves: the counts up to the last line whose tokens are in, and how to go
    on (tokens there already are skipped, so the same command imports only the rest)."""
    if not done.line:
        return ["interrupted: nothing was imported"]
    counts = done.counts
    return [
        f"interrupted: imported {counts.imported:,} tokens into {target}, skipped "
        f"{counts.skipped:,} (already there), up to line {done.line:,} of {file}",
        "the same command goes on: the tokens already there are skipped",
    ]


@click.command("import")
@click.argument("file", metavar="FILE", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--db",
    "db_url",
    metavar="URL",
    default=None,
    help=f"The database to write. Default: {DEFAULT_DB_URL}.",
)
@click.option(
    "--url",
    "url",
    metavar="URL",
    default=None,
    help="Send the tokens to the control plane at URL instead (an admin token: "
    "$STATEOUS_AUTH_TOKEN).",
)
def import_command(file: Path, db_url: str | None, url: str | None) -> None:
    """Put exported tokens back (from `prune --export FILE`), skipping ids already there."""
    if db_url is not None and url is not None:
        raise usage_error("give --db URL or --url URL, not both")
    if not file.is_file():
        raise StateousError(f"there is no file {file}")
    done = Done(ImportCounts())
    target = url or mask_url(db_url or DEFAULT_DB_URL)
    with on_interrupt(lambda: interrupted_lines(done, target, file)):
        if url is not None:
            counts, target = over_http(url, file, done)
        else:
            counts = into_database(db_url or DEFAULT_DB_URL, file, done)
    click.echo(summary(counts, target))
    sys.stdout.flush()
