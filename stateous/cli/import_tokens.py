"""`stateous import FILE [--db URL]` (spec 95 §2): put the tokens of an export file back, as
ended tokens with their history and children exactly as exported.

It writes the database directly (migrating it first, so an archive opens in a new database of
its own); the HTTP API has no import route, so `--url` is refused with a sentence saying so.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

import click
from sqlalchemy.exc import SQLAlchemyError

from stateous.control.engine.retention import BadEntry, Family, family_of_entry, import_family
from stateous.control.errors import StoreError
from stateous.control.settings import DEFAULT_DB_URL
from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine, mask_url
from stateous.model.errors import StateousError

#: Families written in one transaction.
BATCH = 100


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


def families(path: Path) -> Iterator[Family]:
    """The export entries of `path`, one a line. A last line cut short (a crash while it was
    written, so before its tokens were pruned) is left out with a warning."""
    with _open(path) as lines:
        number = 0
        try:
            for number, line in enumerate(lines, start=1):  # `number` is read after it
                if not line.strip():
                    continue
                if not line.endswith(b"\n"):
                    _cut_short(path, number)
                    return
                yield _family(path, number, line)
        except (EOFError, gzip.BadGzipFile):
            _cut_short(path, number + 1)


def _cut_short(path: Path, number: int) -> None:
    click.echo(f"warning: line {number:,} of {path} is cut short; left out", err=True)


def _family(path: Path, number: int, line: bytes) -> Family:
    try:
        return family_of_entry(json.loads(line))
    except (ValueError, BadEntry) as exc:
        reason = exc if isinstance(exc, BadEntry) else "it is not JSON"
        raise StateousError(f"line {number:,} of {path} is not an export entry: {reason}") from None


def import_all(store: Store, path: Path) -> tuple[int, int]:
    """Import every family of `path`, `BATCH` a transaction: (imported, already there)."""
    imported = skipped = 0
    batch: list[Family] = []

    def write() -> None:
        nonlocal imported, skipped
        with store.begin() as conn:
            for family in batch:
                if import_family(conn, family):
                    imported += 1
                else:
                    skipped += 1
        batch.clear()

    for family in families(path):
        batch.append(family)
        if len(batch) >= BATCH:
            write()
    if batch:
        write()
    return imported, skipped


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
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise StateousError(f"cannot open the database {url}: {reason}") from exc
    return store


@click.command("import")
@click.argument("file", metavar="FILE", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--db", "db_url", default=DEFAULT_DB_URL, show_default=True, help="The database URL.")
@click.option("--url", "url", metavar="URL", default=None, help="Refused: see --db.")
def import_command(file: Path, db_url: str, url: str | None) -> None:
    """Put exported tokens back (from `prune --export FILE`), skipping ids already there."""
    if url is not None:
        raise StateousError(
            "stateous import writes the database itself: give --db URL (the control plane's "
            "HTTP API has no import route)"
        )
    if not file.is_file():
        raise StateousError(f"there is no file {file}")
    store = _store(db_url)
    try:
        imported, skipped = import_all(store, file)
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise StateousError(f"cannot import into {mask_url(db_url)}: {reason}") from exc
    finally:
        store.engine.dispose()
    click.echo(f"imported {imported:,} tokens, skipped {skipped:,} (already there)")
    sys.stdout.flush()
