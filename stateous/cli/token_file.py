"""`stateous token start --file FILE`: start every token of a JSON Lines or CSV
file with `POST /tokens/batch`, a progress bar on a terminal, then the summary and the refusals."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from stateous.cli.interrupt import finish_first, on_interrupt
from stateous.cli.progress import OF_TOTAL, Progress
from stateous.client import Client
from stateous.model.errors import StateousError

BATCH = 500
"""Starts per request."""
JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
CSV_SUFFIXES = (".csv",)
BAD_LINE = 'the line is not a JSON object such as {"token": "T-1", "context": {...}}'


@dataclass(frozen=True)
class Line:
    """One start read from the file: its line number, and its body or why it cannot be sent."""

    number: int
    token: str
    body: dict[str, Any] | None
    problem: str | None = None


@dataclass
class Tally:
    """What the starts came to."""

    started: int = 0
    existed: int = 0
    refusals: list[tuple[int, str]] = field(default_factory=list)
    answered_to: int = 0
    """The last line of the file whose batch was answered (batches go in the file's order)."""
    sending: tuple[int, int] | None = None
    """The first and last line of the batch in flight, if one is."""

    def add(self, line: Line, status: int, body: Any) -> None:
        """Count one answer (`201`, `200`, or a refusal with its sentence)."""
        if status == 201:
            self.started += 1
        elif status == 200:
            self.existed += 1
        else:
            sentence = body.get("error") if isinstance(body, dict) else None
            self.refuse(line, str(sentence or f"refused ({status})"))

    def refuse(self, line: Line, sentence: str) -> None:
        """Record one refusal as `<line>: <token>: <sentence>`."""
        self.refusals.append((line.number, f"{line.number}: {line.token}: {sentence}"))

    def lines(self) -> list[str]:
        """The summary line, then each refusal in the file's order."""
        refused = [text for _, text in sorted(self.refusals, key=lambda item: item[0])]
        summary = f"started {self.started}, already there {self.existed}, refused {len(refused)}"
        return [summary, *refused]

    def interrupted_lines(self, path: Path) -> list[str]:
        """What a Ctrl-C leaves: the counts up to the last line answered, the batch that may
        have started unanswered, and how to go on."""
        if self.answered_to == 0:
            said = [f"interrupted before any line of {path} was answered"]
        else:
            refused = sum(1 for number, _ in self.refusals if number <= self.answered_to)
            said = [
                f"interrupted: started {self.started}, already there {self.existed}, refused "
                f"{refused}, up to line {self.answered_to} of {path}"
            ]
        if self.sending is not None:
            first, last = self.sending
            said.append(f"lines {first} to {last} were being sent: some of them may have started")
        said.append(
            "to go on, run the same command again: a token that exists is left as it is, so "
            "none starts twice"
        )
        return said


# --- reading ----------------------------------------------------------------------------------


def read_lines(path: Path) -> list[Line]:
    """Every start of the file, JSON Lines or CSV (by its suffix, else by its first character)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise StateousError(f"cannot read {path}: {exc.strerror or exc}", code="client") from None
    except UnicodeDecodeError as exc:
        raise StateousError(f"cannot read {path}: it is not UTF-8 ({exc.reason})") from None
    suffix = path.suffix.lower()
    if suffix in CSV_SUFFIXES or (
        suffix not in JSON_SUFFIXES and not text.lstrip().startswith("{")
    ):
        return list(_csv_lines(path, text))
    return list(_json_lines(text))


def _json_lines(text: str) -> Iterator[Line]:
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            yield Line(number, "-", None, f"the line is not JSON: {detail}")
            continue
        if not isinstance(value, dict):
            yield Line(number, "-", None, BAD_LINE)
            continue
        token = value.get("token")
        body = {"token": token, "context": value.get("context")}
        yield Line(number, token if isinstance(token, str) else json.dumps(token), body)


def _no_constant(word: str) -> Any:
    raise ValueError(f"{word} is not a JSON value")


def _csv_lines(path: Path, text: str) -> Iterator[Line]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None or "token" not in header:
        raise StateousError(f"{path} has no 'token' column in its first line")
    keys = [name for name in header if name != "token"]
    where = header.index("token")
    end = reader.line_num
    for row in reader:
        number, end = end + 1, reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        token = row[where] if where < len(row) else ""
        if len(row) != len(header):
            problem = f"the line has {len(row)} fields; the first line names {len(header)}"
            yield Line(number, token or "-", None, problem)
            continue
        cells = dict(zip(header, row, strict=True))
        context = {key: cell_value(cells[key]) for key in keys if cells[key] != ""}
        yield Line(number, token, {"token": token, "context": context})


def cell_value(cell: str) -> Any:
    """A CSV cell as a context value: a JSON number, `true`, `false`, `null`, object, array or
    quoted string as that value; any other text as it is (an empty cell leaves the key out)."""
    try:
        return json.loads(cell, parse_constant=_no_constant)
    except ValueError:
        return cell


# --- sending ----------------------------------------------------------------------------------


def start_file(client: Client, path: Path, reason: str | None = None) -> Tally:
    """Start every line of `path` in batches; the tally of what happened to each.

    Ctrl-C lets the batch in flight be answered, then ends the command with the counts so far
    (`Interrupted`); a second Ctrl-C stops at once."""
    tally = Tally()
    with on_interrupt(lambda: tally.interrupted_lines(path)):
        lines = read_lines(path)
        for line in lines:
            if line.problem is not None:
                tally.refuse(line, line.problem)
        _send(client, [line for line in lines if line.body is not None], tally, reason)
    return tally


def _send(client: Client, sendable: list[Line], tally: Tally, reason: str | None) -> None:
    with Progress("starting", len(sendable), OF_TOTAL) as update:
        for start in range(0, len(sendable), BATCH):
            group = sendable[start : start + BATCH]
            # The values go as read: the control plane refuses a token or context of the wrong
            # type with the sentence `POST /tokens` has for it.
            starts = [(line.body["token"], line.body["context"]) for line in group if line.body]
            tally.sending = (group[0].number, group[-1].number)
            with finish_first():
                answers = client.start_many(starts, batch_size=BATCH, reason=reason)
                for line, answer in zip(group, answers, strict=True):
                    tally.add(line, int(answer["status"]), answer.get("body"))
                tally.sending, tally.answered_to = None, group[-1].number
            update(advance=len(group))


def print_tally(tally: Tally) -> Sequence[str]:
    """Print the summary and the refusals on stdout."""
    lines = tally.lines()
    for line in lines:
        click.echo(line)
    return lines
