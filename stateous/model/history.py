"""The lines of `stateous token show`: the token line, children, listings and history lines.

Pure: every function takes decoded JSON (the control plane's answers) and returns `Line`s, each a
tuple of `(text, style)` segments. `str(line)` is the plain text (printed when stdout is not a
terminal); a style is a Rich style definition (`"dim"`, `"bold red"`, or `""` for none), so the CLI
and the Textual console colour the same segments with `rich.text.Text.assemble(*line.segments)`
without this module importing Rich.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from stateous.model.versions import short

Segment = tuple[str, str]
"""A piece of a line: its text and a Rich style definition (`""` means plain)."""

# The reserved names of the graph and how people see them.
_DISPLAY_STATES = {"__start__": "START", "__end__": "END"}
PAYLOAD_LIMIT = 80
"""A rendered payload longer than this is cut to 77 characters and `...`."""
CHILDREN_LIMIT = 1000
"""`token show ID` asks for at most this many children."""
CHILDREN_CUT_LINE = "  (only the 1000 most recently moved children are shown; there can be more)"
NO_TOKENS = "no tokens"

STATUS_STYLES = {
    "active": "green",
    "paused": "dark_orange",
    "completed": "dim",
    "failed": "red",
    "cancelled": "grey50",
}
"""The colour of each token status (the same in every view and in `token show`)."""

STYLE_TIME = "dim"
STYLE_SEQ = "dim"
STYLE_TOKEN = "bold"
STYLE_STATE = "cyan"
STYLE_BAD = "red"
STYLE_GOOD = "green"
STYLE_QUIET = "dim"

# The style of a history line's text, by ledger kind (absent: plain).
_KIND_STYLES = {
    "event_rejected": STYLE_BAD,
    "task_failed": STYLE_BAD,
    "failed": "bold red",
    "event_dropped": STYLE_BAD,
    "completed": "bold green",
    "cancelled": STATUS_STYLES["cancelled"],
    "task_cancelled": STATUS_STYLES["cancelled"],
    "paused": STATUS_STYLES["paused"],
    "resumed": STATUS_STYLES["paused"],
    "event_deferred": "yellow",
    "event_replayed": "yellow",
    "note": "italic",
    "event_accepted": "bold",
    "task_retrying": "yellow",
    "retried": "bold yellow",
    "moved": "bold yellow",
    "migrated": "bold yellow",
}


@dataclass(frozen=True)
class Line:
    """One printed line as styled segments; `str(line)` is its plain text."""

    segments: tuple[Segment, ...]

    def __str__(self) -> str:
        return "".join(text for text, _ in self.segments)

    @property
    def text(self) -> str:
        """The plain text of the line (the same as `str(line)`)."""
        return str(self)


def _plain(text: str) -> Line:
    return Line(((text, ""),))


# ---------------------------------------------------------------- values


def display_state(state: object) -> str:
    """A state's name as people see it: `START`/`END` for the reserved names, `?` if absent."""
    if state is None:
        return "?"
    text = _value(state)
    return _DISPLAY_STATES.get(text, text)


def payload_json(value: object) -> str:
    """Compact JSON as the history shows it, cut to 77 characters and `...` past 80."""
    text = json.dumps(value, ensure_ascii=True, separators=(", ", ": "), default=str)
    if len(text) > PAYLOAD_LIMIT:
        return text[: PAYLOAD_LIMIT - 3] + "..."
    return text


def _value(value: object) -> str:
    """A data field as text: a string as is, a missing field as `?`, anything else as JSON."""
    if value is None:
        return "?"
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return payload_json(value)


def _visit_suffix(visit: object) -> str:
    """` (visit N)` only for an integer visit greater than 1."""
    if isinstance(visit, int) and not isinstance(visit, bool) and visit > 1:
        return f" (visit {visit})"
    return ""


def _parse_time(text: object) -> datetime | None:
    """An ISO 8601 time (UTC when it names no zone), or None when `text` is not one."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def local_time(at: object, tz: tzinfo | None = None) -> str:
    """`HH:MM:SS` of an ISO 8601 time in `tz` (default: this computer's zone); other text as is."""
    moment = _parse_time(at)
    if moment is None:
        return _value(at)
    return moment.astimezone(tz).strftime("%H:%M:%S")


def local_datetime(at: object, tz: tzinfo | None = None) -> str:
    """`YYYY-MM-DD HH:MM:SS` of an ISO 8601 time in `tz` (default: local); other text as is."""
    moment = _parse_time(at)
    if moment is None:
        return _value(at)
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S")


# ---------------------------------------------------------------- token lines


def token_line(token: Mapping[str, Any]) -> Line:
    """`<token>: <state>[ (visit N)], <status>`."""
    status = _value(token.get("status"))
    return Line(
        (
            (_value(token.get("token")), STYLE_TOKEN),
            (": ", ""),
            (display_state(token.get("state")), STYLE_STATE),
            (_visit_suffix(token.get("visit")), STYLE_QUIET),
            (", ", ""),
            (status, STATUS_STYLES.get(status, "")),
        )
    )


def duplicate_line(token: Mapping[str, Any]) -> Line:
    """`duplicate: <token line>`: the answer to a repeated idempotency key."""
    return Line((("duplicate: ", "yellow"), *token_line(token).segments))


def child_line(token: Mapping[str, Any]) -> Line:
    """`  child <token line>`: one child in `token show ID`."""
    return Line((("  child ", STYLE_QUIET), *token_line(token).segments))


def listing_lines(tokens: Sequence[Mapping[str, Any]]) -> list[Line]:
    """The lines of `token show` without an ID: one token line each, or `no tokens`."""
    if not tokens:
        return [_plain(NO_TOKENS)]
    return [token_line(token) for token in tokens]


def children_lines(children: Sequence[Mapping[str, Any]]) -> list[Line]:
    """The children of `token show ID`, with the cut notice when the limit came back."""
    lines = [child_line(child) for child in children]
    if len(children) >= CHILDREN_LIMIT:
        lines.append(Line(((CHILDREN_CUT_LINE, STYLE_QUIET),)))
    return lines


def show_lines(
    token: Mapping[str, Any],
    children: Sequence[Mapping[str, Any]],
    history: Iterable[Mapping[str, Any]],
    tz: tzinfo | None = None,
) -> list[Line]:
    """Everything `token show ID` prints: token line, children, then one line per entry."""
    return [token_line(token), *children_lines(children), *history_lines(history, tz)]


# ---------------------------------------------------------------- history


def history_lines(entries: Iterable[Mapping[str, Any]], tz: tzinfo | None = None) -> list[Line]:
    """One line per ledger entry, in the order given (the control plane sends `seq` order)."""
    return [history_line(entry, tz) for entry in entries]


def history_line(entry: Mapping[str, Any], tz: tzinfo | None = None) -> Line:
    """`HH:MM:SS  #<seq>  <text>` for one entry `{seq, at, kind, data}`."""
    kind = entry.get("kind")
    return Line(
        (
            (local_time(entry.get("at"), tz), STYLE_TIME),
            ("  ", ""),
            (f"#{_value(entry.get('seq'))}", STYLE_SEQ),
            ("  ", ""),
            (
                history_text(entry, tz),
                _KIND_STYLES.get(kind, "") if isinstance(kind, str) else "",
            ),
        )
    )


def history_text(entry: Mapping[str, Any], tz: tzinfo | None = None) -> str:
    """The `<text>` part of a history line, from the entry's `kind` and `data`."""
    kind = entry.get("kind")
    raw = entry.get("data")
    data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    if kind == "timer_set":
        return f"timer set: {_value(data.get('event'))} at {_due(data, tz)}"
    render = _RENDERERS.get(kind) if isinstance(kind, str) else None
    if render is None:
        return f"{_value(kind)} {payload_json(dict(data))}"
    return render(data) + by_suffix(data.get("by"))


def by_suffix(by: object) -> str:
    """Who did it: ` [alice, console: the vendor is down]`, ` [alice, cli]` (no
    colon when the reason is empty), with `bulk N` after the way when a bulk job did it."""
    if not isinstance(by, Mapping):
        return ""
    parts = [_value(by[name]) for name in ("actor", "via") if by.get(name) is not None]
    if by.get("bulk") is not None:
        parts.append(f"bulk {_value(by['bulk'])}")
    reason = by.get("reason")
    tail = f": {_value(reason)}" if isinstance(reason, str) and reason else ""
    return f" [{', '.join(parts)}{tail}]" if parts or tail else ""


def _due(data: Mapping[str, Any], tz: tzinfo | None) -> str:
    return local_datetime(data.get("due_at"), tz) if "due_at" in data else "?"


def _field(data: Mapping[str, Any], name: str) -> str:
    return _value(data.get(name))


def _started(data: Mapping[str, Any]) -> str:
    if "parent" in data:
        return f"started by {_field(data, 'parent')}"
    # A token a schedule started.
    return f"started by schedule {_field(data, 'schedule')}" if "schedule" in data else "started"


def _entered(data: Mapping[str, Any]) -> str:
    return f"entered {display_state(data.get('state'))}{_visit_suffix(data.get('visit'))}"


def _event_accepted(data: Mapping[str, Any]) -> str:
    text = f"{_field(data, 'event')} in {display_state(data.get('state'))}"
    payload = data.get("payload")
    if payload is None or payload == {}:
        return text
    return f"{text}: {payload_json(payload)}"


def _context_changed(data: Mapping[str, Any]) -> str:
    keys = data.get("keys")
    if not isinstance(keys, list):
        return "context changed: ?"
    return "context changed: " + ", ".join(_value(key) for key in keys)


def _retried(data: Mapping[str, Any]) -> str:
    return f"retried in {display_state(data.get('state'))}"


def _written_keys(data: Mapping[str, Any]) -> str:
    """`; context changed: priority, team` for the context keys a migration wrote, else
    empty."""
    keys = data.get("keys")
    if not isinstance(keys, list) or not keys:
        return ""
    return "; context changed: " + ", ".join(_value(key) for key in keys)


def _moved(data: Mapping[str, Any]) -> str:
    return f"moved from {display_state(data.get('from'))} to {display_state(data.get('to'))}"


def _migrated(data: Mapping[str, Any]) -> str:
    """`migrated to sha256:77ef12ab… (review → checking)`: the target version as
    people read it (8 hex digits), the state before and the state after; then the context keys
    it wrote (`; context changed: priority`), if any."""
    to = data.get("to")
    version = f"sha256:{short(to)}…" if isinstance(to, str) else "?"
    states = f"{display_state(data.get('state'))} → {display_state(data.get('into'))}"
    return f"migrated to {version} ({states}){_written_keys(data)}"


def _cancelled(data: Mapping[str, Any]) -> str:
    return f"cancelled: {_field(data, 'reason')}" if "reason" in data else "cancelled"


def _fmt(template: str, *names: str) -> Callable[[Mapping[str, Any]], str]:
    """A renderer that fills `template`'s `{}` with the named data fields, `?` when missing."""

    def render(data: Mapping[str, Any]) -> str:
        return template.format(*(_field(data, name) for name in names))

    return render


_RENDERERS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "started": _started,
    "branch_started": _fmt("started the child {}", "token"),
    "entered": _entered,
    "task_queued": _fmt("task {} queued for {}", "task", "state"),
    "task_claimed": _fmt("{} took task {} (attempt {})", "supervisor", "task", "attempt"),
    "task_done": _fmt("task {} done", "task"),
    "task_waiting": _fmt("task {} waits: the work goes on outside", "task"),
    "task_cancelled": _fmt("task {} cancelled", "task"),
    "task_failed": _fmt("task {} failed: {}", "task", "error"),
    "task_retrying": _fmt("task {} is tried again (attempt {})", "task", "attempt"),
    "event_accepted": _event_accepted,
    "event_rejected": _fmt("{} refused: {}", "event", "reason"),
    "timer_fired": _fmt("timer fired: {}", "event"),
    "note": _fmt("{}", "text"),
    "memory_set": _fmt("memory set: {} (in {})", "memory_key", "state"),
    "memory_deleted": _fmt("memory deleted: {} (in {})", "memory_key", "state"),
    "context_changed": _context_changed,
    "paused": _fmt("paused"),
    "resumed": _fmt("resumed"),
    "event_deferred": _fmt("{} held while paused", "event"),
    "event_replayed": _fmt("{} applied on resume", "event"),
    "event_dropped": _fmt("{} dropped on resume: {}", "event", "reason"),
    "completed": _fmt("completed"),
    "failed": _fmt("failed: {}", "reason"),
    "cancelled": _cancelled,
    "retried": _retried,
    "moved": _moved,
    "migrated": _migrated,
}

KINDS: frozenset[str] = frozenset({*_RENDERERS, "timer_set"})
"""Every ledger kind the history renders by name (any other kind renders as `<kind> <data>`)."""
