"""A supervisor's folder as the console sees it: `stateous.yaml`, `status.json`, the outbox.

The outbox is opened read-only (`mode=ro`) and never written; a supervisor that holds its
exclusive lock makes it unreadable, which is how the console knows that the supervisor runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

STALE_SECONDS = 60.0
"""An outbox message older than this is highlighted: the control plane has not taken it."""


@dataclass(frozen=True)
class OutboxMessage:
    """One row of the outbox's `messages` table."""

    id: int
    task: int
    attempt: int
    token: str
    kind: str
    body: str
    created_at: str

    @property
    def summary(self) -> str:
        """A one-line summary of the body: the outcome of a report, a note's text, a memory key."""
        try:
            body = json.loads(self.body)
        except ValueError:
            return self.body[:80]
        if not isinstance(body, dict):
            return str(body)[:80]
        return _summary(self.kind, body)[:80]


def _summary(kind: str, body: dict[str, Any]) -> str:
    if kind == "report":
        outcome = str(body.get("kind", "?"))
        if outcome == "event":
            return f"event {body.get('event', '?')}"
        if outcome == "failed":
            return f"failed: {body.get('error', '')}"
        return outcome
    if kind == "note":
        return f"note: {body.get('text', '')}"
    if kind == "memory":
        verb = "delete" if body.get("value") is None else "set"
        return f"memory {verb} {body.get('key', '?')}"
    return json.dumps(body)


@dataclass(frozen=True)
class SupervisorView:
    """What the console knows of one supervisor's folder at one moment."""

    folder: str
    name: str | None = None
    url: str | None = None
    running: bool = False
    status: dict[str, Any] = field(default_factory=dict)
    messages: tuple[OutboxMessage, ...] = ()
    outbox_readable: bool = True
    problems: tuple[str, ...] = ()

    @property
    def grants(self) -> list[dict[str, Any]]:
        """The grants the supervisor runs, from its `status.json`."""
        found = self.status.get("running", self.status.get("grants", []))
        return [g for g in found if isinstance(g, dict)] if isinstance(found, list) else []

    @property
    def outbox_size(self) -> int | None:
        """The number of messages: counted when readable, else from `status.json`."""
        if self.outbox_readable:
            return len(self.messages)
        size = self.status.get("outbox")
        return size if isinstance(size, int) else None


def read_folder(folder: str) -> SupervisorView:
    """Read one supervisor folder; every problem becomes a sentence, never an exception."""
    root = Path(folder)
    problems: list[str] = []
    name, url = _read_yaml(root / "stateous.yaml", problems)
    status = _read_status(root / ".stateous" / "status.json", problems)
    messages, readable, locked = _read_outbox(root / ".stateous" / "outbox.db", problems)
    running = locked or _pid_alive(status.get("pid"))
    status_name = status.get("name")
    return SupervisorView(
        folder=folder,
        name=status_name if isinstance(status_name, str) else name,
        url=url,
        running=running,
        status=status,
        messages=tuple(messages),
        outbox_readable=readable,
        problems=tuple(problems),
    )


def _read_yaml(path: Path, problems: list[str]) -> tuple[str | None, str | None]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        problems.append(f"{path} does not exist: is this a supervisor's folder?")
        return None, None
    except (OSError, yaml.YAMLError) as exc:
        problems.append(f"cannot read {path}: {exc}")
        return None, None
    if not isinstance(data, dict):
        return None, None
    name, url = data.get("name"), data.get("url")
    return (
        name if isinstance(name, str) else None,
        url.rstrip("/") if isinstance(url, str) else None,
    )


def _read_status(path: Path, problems: list[str]) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        # The supervisor rewrites the file at each heartbeat; a torn read heals at the next poll.
        problems.append(f"cannot read {path}: {exc}")
        return {}
    return data if isinstance(data, dict) else {}


def _read_outbox(path: Path, problems: list[str]) -> tuple[list[OutboxMessage], bool, bool]:
    """(messages, readable, locked): locked means a supervisor holds the file now."""
    if not path.exists():
        return [], True, False
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=0.05)
    except sqlite3.Error as exc:
        problems.append(f"cannot open {path}: {exc}")
        return [], False, False
    try:
        rows = conn.execute(
            "SELECT id, task, attempt, token, kind, body, created_at FROM messages ORDER BY id"
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return [], False, True
        problems.append(f"cannot read {path}: {exc}")
        return [], False, False
    finally:
        conn.close()
    return [OutboxMessage(*(_cell(v) for v in row)) for row in rows], True, False  # type: ignore[arg-type]  # row shapes follow the table


def _cell(value: object) -> object:
    return value if value is not None else ""


def _pid_alive(pid: object) -> bool:
    """Whether a process with this pid runs on this computer (status.json of a live supervisor)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
