"""Parsing request bodies (strict JSON, at most 64 levels) and arguments, with their refusals
(`400 bad_request`, `422 invalid_body`, `422 invalid_argument`); the body's size is checked
before, at the edge (stateous.control.api.edge)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stateous.control.engine.moves import Schedule
from stateous.control.engine.report import Outcome
from stateous.control.engine.versions import Versions
from stateous.control.errors import Refusal, invalid
from stateous.model.durations import DurationError, parse_duration
from stateous.model.wire import TOKEN_STATUSES

MAX_DEPTH = 64
MAX_ID = 2**63 - 1
REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
DIGITS = re.compile(r"[0-9]+")
#: The ways an operator's act can come.
VIAS = ("cli", "console", "client", "api")
BY_PARTS = ("actor", "reason", "via")
#: A checksum or a structure: `sha256:` and 64 lower-case hex digits.
CHECKSUM = re.compile(r"sha256:[0-9a-f]{64}")


def bad_request(message: str) -> Refusal:
    """`400 bad_request`."""
    return Refusal("bad_request", message, 400)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_body(raw: bytes) -> dict[str, Any]:
    """A JSON object from a body: empty means `{}`; strict JSON; at most 64 levels."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError as exc:
        raise bad_request(
            f"the body is not JSON: it is nested more than {MAX_DEPTH} levels deep"
        ) from exc
    except UnicodeDecodeError as exc:
        raise bad_request(f"the body is not JSON: it is not UTF-8 ({exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise bad_request(
            f"the body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except ValueError as exc:
        raise bad_request(f"the body is not JSON: {exc}") from exc
    if b"\\u" in raw:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise bad_request("the body is not JSON: it holds a lone surrogate escape") from exc
    # Each level opens with `{` or `[`: a body with no more of them than the limit is within
    # it, and most bodies are (the walk of every value costs more than counting bytes).
    if raw.count(b"{") + raw.count(b"[") > MAX_DEPTH and depth(value) > MAX_DEPTH:
        raise bad_request(f"the body is not JSON: it is nested more than {MAX_DEPTH} levels deep")
    if not isinstance(value, dict):
        raise invalid("invalid_body", "the body must be a JSON object")
    return value


def depth(value: Any) -> int:
    """Nesting levels: each object or array is one level (iterative, so it cannot overflow)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item)
    return deepest


def is_whole(value: Any, low: int = 1, high: int = MAX_ID) -> bool:
    """An integer (never a boolean) within bounds."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def supervisor_arg(body: Mapping[str, Any], required: bool = True) -> str | None:
    """`supervisor`: a string of 1-256 characters (`invalid_argument`)."""
    value = body.get("supervisor")
    if value is None and not required:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= 256:
        raise invalid("invalid_argument", "'supervisor' is a string of 1 to 256 characters")
    return value


def claim_args(body: Mapping[str, Any]) -> tuple[str, list[str], str | None]:
    """`supervisor`, `states`, `request` of a claim."""
    supervisor = str(supervisor_arg(body))
    states = body.get("states")
    if not isinstance(states, list) or not all(
        isinstance(s, str) and 1 <= len(s) <= 129 for s in states
    ):
        raise invalid("invalid_body", "'states' is a list of state names")
    if len(states) > 1000:
        raise invalid("invalid_argument", "'states' has at most 1000 state names")
    request = body.get("request")
    if request is not None and (not isinstance(request, str) or not REQUEST_ID.fullmatch(request)):
        raise invalid("invalid_argument", "'request' is 1 to 64 letters, digits, '.', '_' or '-'")
    return supervisor, states, request


def claim_structure(body: Mapping[str, Any], versions: Versions) -> str:
    """The structure whose tasks a claim is granted: its `checksum`'s, else the
    current one; a checksum never served is `invalid_argument`."""
    checksum = body.get("checksum")
    if checksum is None:
        return versions.current.structure
    graph = versions.by_checksum(checksum) if isinstance(checksum, str) else None
    if graph is None:
        raise invalid("invalid_argument", f"'checksum' {checksum!r} is not a version on record")
    return graph.structure


def heartbeat_args(body: Mapping[str, Any]) -> tuple[str, list[int]]:
    """`supervisor`, `tasks` of a heartbeat."""
    supervisor = str(supervisor_arg(body))
    tasks = body.get("tasks")
    if not isinstance(tasks, list) or not all(is_whole(t) for t in tasks):
        raise invalid("invalid_body", "'tasks' is a list of task ids")
    if len(tasks) > 1000:
        raise invalid("invalid_argument", "'tasks' has at most 1000 task ids")
    return supervisor, tasks


def _object_or_null(body: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    value = body.get(name)
    if value is not None and not isinstance(value, dict):
        raise invalid("invalid_body", f"a report's {name!r} is a JSON object, or null")
    return value


def _schedules(body: Mapping[str, Any]) -> list[Schedule]:
    raw = body.get("schedules", [])
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise invalid("invalid_body", "a report's 'schedules' is a list")
    found = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("event"), str):
            raise invalid(
                "invalid_body", "a schedule is an object with an 'event', a 'payload' and 'after'"
            )
        payload = item.get("payload")
        if payload is not None and not isinstance(payload, dict):
            raise invalid("invalid_body", "a schedule's 'payload' is a JSON object, or null")
        after = item.get("after")
        try:
            parse_duration(after)
        except DurationError as exc:
            raise invalid("invalid_body", f"a schedule's 'after': {exc.message}") from exc
        found.append(Schedule(item["event"], payload, str(after)))
    return found


def report_args(body: Mapping[str, Any]) -> Outcome:
    """A report's body, checked for shape (`invalid_body`, `invalid_argument`)."""
    kind = body.get("kind")
    if kind not in ("event", "waiting", "failed"):
        raise invalid("invalid_body", "a report's 'kind' is 'event', 'waiting' or 'failed'")
    event = body.get("event")
    if (kind == "event" or event is not None) and not isinstance(event, str):
        raise invalid("invalid_body", "a report of an event needs the event's name in 'event'")
    payload = _object_or_null(body, "payload")
    error = body.get("error")
    if (kind == "failed" or error is not None) and not isinstance(error, str):
        raise invalid("invalid_body", "a failed report needs an 'error' text")
    context = _object_or_null(body, "context")
    schedules = _schedules(body)
    attempt = body.get("attempt")
    if attempt is not None and not is_whole(attempt):
        raise invalid("invalid_body", "'attempt' is a whole number of 1 or more")
    supervisor = supervisor_arg(body, required=False) if "supervisor" in body else None
    return Outcome(str(kind), event, payload, error, context, schedules, attempt, supervisor)


def attempt_arg(body: Mapping[str, Any]) -> int | None:
    """A note's or memory write's `attempt` (`invalid_argument`)."""
    attempt = body.get("attempt")
    if attempt is not None and not is_whole(attempt):
        raise invalid("invalid_argument", "'attempt' is a whole number of 1 or more")
    return attempt


def note_args(body: Mapping[str, Any]) -> tuple[str, int | None]:
    """The trimmed `text` and `attempt` of a note."""
    text = body.get("text")
    trimmed = text.strip() if isinstance(text, str) else ""
    if not 1 <= len(trimmed) <= 500:
        raise invalid("invalid_payload", "a note needs a 'text' of 1 to 500 characters")
    return trimmed, attempt_arg(body)


def memory_args(body: Mapping[str, Any]) -> tuple[str, Any, int | None]:
    """`key`, `value` and `attempt` of a memory write."""
    key = body.get("key")
    if not isinstance(key, str) or not 1 <= len(key) <= 128:
        raise invalid("invalid_payload", "'key' is a string of 1 to 128 characters")
    if "value" not in body:
        raise invalid("invalid_body", "memory needs a 'value'; null deletes the key")
    return key, body["value"], attempt_arg(body)


def listing_args(
    query: Mapping[str, str | None],
) -> tuple[str | None, str | None, int, str | None]:
    """`status`, `parent`, `limit` and `structure` of `GET /tokens`."""
    status, parent, limit_text = query.get("status"), query.get("parent"), query.get("limit")
    structure = query.get("structure")
    if structure is not None and not CHECKSUM.fullmatch(structure):
        raise invalid("invalid_argument", "'structure' is 'sha256:' and 64 hex digits")
    if status is not None and status not in TOKEN_STATUSES:
        raise invalid("invalid_argument", "'status' is one of " + ", ".join(TOKEN_STATUSES))
    if parent is not None and not 1 <= len(parent) <= 128:
        raise invalid("invalid_argument", "'parent' is a token id of 1 to 128 characters")
    limit = 100
    if limit_text is not None:
        if (
            not DIGITS.fullmatch(limit_text)
            or len(limit_text) > 18
            or not 1 <= int(limit_text) <= 1000
        ):
            raise invalid("invalid_argument", "'limit' is a whole number from 1 to 1000")
        limit = int(limit_text)
    return status, parent, limit, structure


def listing_more(query: Mapping[str, str | None]) -> dict[str, str]:
    """`state` and `prefix` of `GET /tokens`, as given."""
    more: dict[str, str] = {}
    state, prefix = query.get("state"), query.get("prefix")
    if state is not None:
        if not 1 <= len(state) <= 64:
            raise invalid("invalid_argument", "'state' is a state name of 1 to 64 characters")
        more["state"] = state
    if prefix is not None:
        if not 1 <= len(prefix) <= 128:
            raise invalid("invalid_argument", "'prefix' is a text of 1 to 128 characters")
        more["prefix"] = prefix
    return more


def context_args(params: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Each `context.KEY=JSON` of `GET /tokens` as KEY → the value; a value that
    is not JSON is `422 invalid_argument` naming it."""
    wanted: dict[str, Any] = {}
    for name, text in params:
        if not name.startswith("context."):
            continue
        key = name.removeprefix("context.")
        if not 1 <= len(key) <= 64:
            raise invalid("invalid_argument", f"{name!r} names no context key")
        try:
            wanted[key] = json.loads(text, parse_constant=_not_json)
        except ValueError:
            raise invalid(
                "invalid_argument",
                f'{name!r} is a JSON value, e.g. {name}="acme" or {name}=4711',
            ) from None
    return wanted


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def by_arg(body: Mapping[str, Any], actor: str | None = None) -> dict[str, Any] | None:
    """The optional `by` of an operator's act as its ledger rows carry it.

    Answers `{"actor", "reason"?, "via"?}` (reason only when not empty), or None when the body has
    none and no named token (`actor`) authenticated the request; a named token's name is the
    actor whatever the body says. A malformed `by` is `422 invalid_body` naming the part.
    """
    value = body.get("by")
    if value is None:
        return None if actor is None else {"actor": actor, "via": "api"}
    if not isinstance(value, dict):
        raise invalid("invalid_body", "'by' is an object with 'actor', 'reason' and 'via'")
    unknown = [name for name in value if name not in BY_PARTS]
    if unknown:
        raise invalid(
            "invalid_body", f"'by' has no part {unknown[0]!r}; its parts are actor, reason, via"
        )
    given = value.get("actor")
    if not isinstance(given, str) or not 1 <= len(given) <= 64 or not given.isprintable():
        raise invalid("invalid_body", "'by.actor' is a text of 1 to 64 printable characters")
    reason = value.get("reason", "")
    if not isinstance(reason, str) or len(reason) > 500:
        raise invalid("invalid_body", "'by.reason' is a text of at most 500 characters")
    via = value.get("via")
    if via is not None and via not in VIAS:
        raise invalid("invalid_body", "'by.via' is one of " + ", ".join(VIAS))
    found: dict[str, Any] = {"actor": actor if actor is not None else given}
    if reason:
        found["reason"] = reason
    if via is not None:
        found["via"] = via
    return found


# --- batches --------------------------------------------------------------------------

MAX_GRANTS = 64
MAX_MESSAGES = 100
MAX_STARTS = 1000
MESSAGE_TYPES = ("report", "note", "memory")


@dataclass(frozen=True)
class Message:
    """One message of `POST /tasks/messages`: its single route's body, for task `task`."""

    type: str
    task: int
    body: dict[str, Any]


def max_arg(body: Mapping[str, Any]) -> int | None:
    """A claim's `max`: 1 to 64, or None when absent or null (`invalid_body`)."""
    value = body.get("max")
    if value is None:
        return None
    if not is_whole(value, 1, MAX_GRANTS):
        raise invalid("invalid_body", f"'max' is a whole number from 1 to {MAX_GRANTS}")
    return int(value)


def messages_args(body: Mapping[str, Any]) -> tuple[str, list[Message]]:
    """`supervisor` and `messages` of `POST /tasks/messages`; any other shape `invalid_body`.

    Only the shape is checked here: each message's own body gets its single route's checks
    when it is applied, and refusals of those answer that message alone.
    """
    supervisor = body.get("supervisor")
    if not isinstance(supervisor, str) or not 1 <= len(supervisor) <= 256:
        raise invalid("invalid_body", "'supervisor' is a string of 1 to 256 characters")
    items = body.get("messages")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_MESSAGES:
        raise invalid("invalid_body", f"'messages' is a list of 1 to {MAX_MESSAGES} messages")
    return supervisor, [_message(number, item) for number, item in enumerate(items, start=1)]


def _message(number: int, item: Any) -> Message:
    shape = (
        f"message {number} is not an object with a 'type' (report, note or memory), "
        "a 'task' id and a 'body' object"
    )
    if not isinstance(item, dict):
        raise invalid("invalid_body", shape)
    kind, task, inner = item.get("type"), item.get("task"), item.get("body")
    # Any whole number is a task id here, as any digits are in a path: one above 2^63-1 is
    # that message's `404 task_not_found`.
    if not isinstance(task, int) or isinstance(task, bool) or task < 0:
        raise invalid("invalid_body", shape)
    if kind not in MESSAGE_TYPES or not isinstance(inner, dict):
        raise invalid("invalid_body", shape)
    return Message(str(kind), task, inner)


def starts_args(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The `tokens` of `POST /tokens/batch`: 1 to 1000 objects, each `POST /tokens`'s body."""
    items = body.get("tokens")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_STARTS:
        raise invalid("invalid_body", f"'tokens' is a list of 1 to {MAX_STARTS} starts")
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise invalid(
                "invalid_body", f"start {number} is not an object with a 'token' and a 'context'"
            )
    return items
