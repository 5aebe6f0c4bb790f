"""`stateous prune --ended-before 90d|TIME [--export FILE] [--dry-run] [--yes] [--url URL]`:
delete ended top tokens for good, each page written to the export file and
`fsync`ed before it is pruned, so a crash at any moment leaves every pruned token in the file."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import click

from stateous.cli.ask import ask_yes
from stateous.cli.interrupt import finish_first, on_interrupt
from stateous.cli.progress import TOKENS, Progress
from stateous.cli.token import control_plane, url_option, wrong_shape
from stateous.client import Client
from stateous.client.wire import Request
from stateous.model.durations import DurationError, parse_duration
from stateous.model.errors import StateousError

#: Tokens a page: the most `GET /export` answers and `POST /prune` takes.
PAGE = 1000


class Cutoff(click.ParamType[str]):
    """`90d` (that long before now) or an ISO 8601 time; answered as an ISO 8601 time.

    A duration's cut keeps the microseconds: cut to the second, `1s` would take only what ended
    1 to 2 seconds ago. `now` is the clock it counts back from (tests fix it)."""

    name = "DURATION|TIME"

    def __init__(self, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.now = now

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        text = str(value)
        if text[:1].isdigit() and text[-1:] in "smhd" and "-" not in text:
            try:
                seconds = parse_duration(text)
            except DurationError as exc:
                self.fail(exc.message, param, ctx)
            moment = self.now().astimezone(UTC) - timedelta(seconds=seconds)
            return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
        try:
            datetime.fromisoformat(text)
        except ValueError:
            self.fail(
                f"{text!r} is neither a duration before now (such as 2d or 90m) nor an "
                "ISO 8601 time (such as 2026-10-16T20:48:44Z)",
                param,
                ctx,
            )
        return text


def human_bytes(count: int) -> str:
    """`812 B`, `1.2 kB`, `3.4 MB`, `1.9 GB` (powers of 1000)."""
    size = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{count} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError  # the loop returns at GB


def entry_line(entry: dict[str, Any]) -> bytes:
    """One export entry as a JSON Lines line (UTF-8, compact)."""
    text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text + "\n").encode()


def append_durably(path: Path, data: bytes) -> None:
    """Append `data` to `path` (a gzip member of its own when the name ends in `.gz`), then
    flush and `fsync` the file: after this returns, the lines survive a crash."""
    try:
        _append(path, data)
    except OSError as exc:
        raise StateousError(
            f"cannot write {path}: {exc.strerror or exc}; the tokens not written stay"
        ) from None


#: The gzip files whose torn last member this process has cut (once a run: a member can only
#: be torn by a crash of an earlier run, and reading the whole file for each page would cost
#: as much as the export again).
_CHECKED: set[Path] = set()


def _append(path: Path, data: bytes) -> None:
    with path.open("a+b") as raw:
        if path.name.endswith(".gz"):
            if path.resolve() not in _CHECKED:
                _cut_torn_member(raw)
                _CHECKED.add(path.resolve())
            with gzip.GzipFile(fileobj=raw, mode="ab") as packed:
                packed.write(data)
        else:
            _cut_torn_line(raw)
            raw.write(data)
        raw.flush()
        os.fsync(raw.fileno())


def _cut_torn_member(raw: IO[bytes]) -> None:
    """Cut off a last gzip member that a crash left unfinished (so before its tokens were
    pruned). Appended to, it would end `import`'s reading there, and every page after it, pruned
    already, would be lost to it."""
    complete = complete_gzip_length(raw)
    if complete < raw.seek(0, os.SEEK_END):
        raw.truncate(complete)


def complete_gzip_length(raw: IO[bytes]) -> int:
    """How many bytes from the start of `raw` are whole gzip members, read in bounded pieces
    (an archive may be larger than memory)."""
    raw.seek(0)
    whole = consumed = 0
    pending = b""
    unpack = zlib.decompressobj(wbits=31)
    while True:
        if not pending:
            pending = raw.read(1 << 16)
            if not pending:
                return whole
        try:
            unpack.decompress(pending, 1 << 16)
        except zlib.error:
            return whole
        if unpack.eof:
            consumed += len(pending) - len(unpack.unused_data)
            whole, pending = consumed, unpack.unused_data
            unpack = zlib.decompressobj(wbits=31)
        else:
            consumed += len(pending) - len(unpack.unconsumed_tail)
            pending = unpack.unconsumed_tail


def _cut_torn_line(raw: IO[bytes]) -> None:
    """Cut off a last line without its newline: a crash while it was written, so before its
    tokens were pruned (the next page exports them again). Appended to, it would spoil the
    line after it, and `import` would refuse the file."""
    size = end = raw.seek(0, os.SEEK_END)
    while end > 0:
        start = max(0, end - 65536)
        raw.seek(start)
        newline = raw.read(end - start).rfind(b"\n")
        if newline >= 0:
            if start + newline + 1 < size:
                raw.truncate(start + newline + 1)
            return
        end = start
    raw.truncate(0)  # its only line is torn


def pages(client: Client, ended_before: str) -> Iterator[list[dict[str, Any]]]:
    """Every page of `GET /export`, in id order."""
    after: str | None = None
    while True:
        page = client.export(ended_before, after=after, limit=PAGE)
        entries, after = page.get("tokens"), page.get("next")
        if not isinstance(entries, list) or not (after is None or isinstance(after, str)):
            raise wrong_shape(client.url)
        if entries:
            yield entries
        if after is None:
            return


@dataclass
class Tally:
    """Tokens pruned (or found), the bytes of their export lines, and the skipped by code."""

    tokens: int = 0
    size: int = 0
    skipped: dict[str, int] | None = None
    in_hand: int = 0
    """The tokens of a page being written and pruned (0 between pages)."""

    def skip(self, codes: dict[str, int]) -> None:
        """Add a prune's skipped tokens."""
        self.skipped = self.skipped or {}
        for code, n in codes.items():
            self.skipped[code] = self.skipped.get(code, 0) + int(n)


def count(client: Client, ended_before: str) -> Tally:
    """What a prune would take now: the tokens and the bytes of their history."""
    tally = Tally()
    for entries in pages(client, ended_before):
        tally.tokens += len(entries)
        tally.size += sum(len(entry_line(entry)) for entry in entries)
    return tally


def prune_all(client: Client, ended_before: str, export: Path | None, total: int | None) -> Tally:
    """Page, write each page (with `export`), then prune its ids.

    Ctrl-C lets the page in hand be written and pruned, then ends the command with what was
    pruned (`Interrupted`); a second Ctrl-C stops at once."""
    tally = Tally()
    with (
        on_interrupt(lambda: interrupted_lines(tally, export)),
        Progress("pruning", total, TOKENS) as update,
    ):
        for entries in pages(client, ended_before):
            with finish_first():
                tally.in_hand = len(entries)
                lines = b"".join(entry_line(entry) for entry in entries)
                if export is not None:
                    append_durably(export, lines)  # before the prune: the file keeps what goes
                ids = [str(entry["token"]["token"]) for entry in entries]
                answer = client.prune(ids, ended_before)
                pruned = int(answer.get("pruned", 0))
                tally.tokens += pruned
                tally.size += len(lines)
                tally.skip(dict(answer.get("skipped") or {}))
                tally.in_hand = 0
            update(advance=len(ids))
    return tally


def interrupted_lines(tally: Tally, export: Path | None) -> list[str]:
    """What a Ctrl-C leaves: what was pruned, a page that may be half done, how to go on.

    Every page is pruned from the oldest id that is left, so the same command prunes the rest
    (with a duration, counted again from now); with --export it appends to the same file."""
    said, in_hand = [f"interrupted: {summary(tally, export)}"], tally.in_hand
    if in_hand and export is not None:
        said.append(
            f"{in_hand:,} more tokens are in {export} and may not be pruned: a second run "
            "writes again those that are not, and import skips a token already there"
        )
    elif in_hand:
        said.append(f"{in_hand:,} more tokens were being pruned: some may be gone")
    goes_on = f", appending to {export}" if export is not None else ""
    said.append(f"to go on, run the same command again: it prunes the rest{goes_on}")
    return said


def summary(tally: Tally, export: Path | None) -> str:
    """`pruned 120,344 tokens (1.9 GB of history) into FILE`."""
    into = f" into {export}" if export is not None else ""
    noun = "token" if tally.tokens == 1 else "tokens"
    line = f"pruned {tally.tokens:,} {noun} ({human_bytes(tally.size)} of history){into}"
    if tally.skipped:
        parts = ", ".join(f"{code} {n:,}" for code, n in sorted(tally.skipped.items()))
        line += f"; skipped {sum(tally.skipped.values()):,} ({parts})"
    return line


#: The roles whose token may prune (`POST /prune`); `read` and `supervise` may not.
PRUNING_ROLES = ("operate", "admin")


def check_may_prune(client: Client) -> None:
    """Refuse, before anything is read or written, a prune that the control plane would refuse
    for the token's role: `GET /health` answers the role as `access` (none without
    authentication, where every route is open)."""
    # GET /health is not among the public Client's methods; the CLI sends it through the same
    # request path as every call (the URLs, the token, the errors).
    health = client._object(Request("GET", "/health"))
    access = health.get("access")
    if isinstance(access, str) and access not in PRUNING_ROLES:
        raise StateousError(
            f"the token in STATEOUS_AUTH_TOKEN has the role {access!r}, and pruning needs "
            "'operate' or 'admin'; nothing was pruned or written"
        )


def create_export(export: Path) -> None:
    """Make the export file, empty and valid, when it does not exist yet (a gzip file gets an
    empty member): a prune that found nothing still leaves the file its summary names."""
    if not export.exists():
        append_durably(export, b"")


def _confirmed(total: int) -> bool:
    """The operator's yes to a prune without an export, asked on the terminal."""
    noun = "token" if total == 1 else "tokens"
    return ask_yes(
        f"prune {total:,} {noun} and their history for good?",
        f"pruning {total:,} {noun} without --export needs a yes, and there is no terminal to "
        "ask in; add --yes",
    )


@click.command("prune")
@click.option(
    "--ended-before",
    "ended_before",
    type=Cutoff(),
    required=True,
    help="Prune tokens that ended before this: a duration ago (90d) or an ISO 8601 time.",
)
@click.option(
    "--export",
    "export",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Append each token to FILE (JSON Lines; gzip when it ends in .gz) before pruning it.",
)
@click.option("--dry-run", is_flag=True, help="Print what would be pruned; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask before pruning without --export.")
@url_option
def prune_command(
    ended_before: str, export: Path | None, dry_run: bool, yes: bool, url: str | None
) -> None:
    """Delete ended tokens and their history for good, after writing them to --export FILE."""
    with control_plane(url) as client:
        if dry_run:
            found = count(client, ended_before)
            noun = "token" if found.tokens == 1 else "tokens"
            click.echo(
                f"would prune {found.tokens:,} {noun} ({human_bytes(found.size)} of history) "
                f"ended before {ended_before}"
            )
            return
        check_may_prune(client)
        total = None
        if export is None and not yes:
            total = count(client, ended_before).tokens
            if total == 0:
                click.echo(f"no tokens ended before {ended_before}")
                return
            if not _confirmed(total):
                click.echo("nothing pruned")
                return
        tally = prune_all(client, ended_before, export, total)
        if export is not None:
            create_export(export)
        click.echo(summary(tally, export))
