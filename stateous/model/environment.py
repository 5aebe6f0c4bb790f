"""Every `STATEOUS_*` environment variable, in one settings object read when needed.

The standard library's dataclasses rather than pydantic-settings: every `stateous token …`
command and every `Client` reads this module, and pydantic-settings' import cost such a process
a tenth of a second (about 140 ms of CPU, most of the command's own start-up).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from stateous.model.errors import StateousError

__all__ = [
    "DEFAULTS",
    "PREFIX",
    "Environment",
    "InvalidEnvironment",
    "Kind",
    "environment",
    "kind_of",
    "meaning_of",
    "value",
    "variable",
    "variables",
]

PREFIX = "STATEOUS_"
"""Every variable's name is the prefix and its field's name in capitals."""

Kind = Literal["text", "word", "seconds", "seconds_or_zero", "flag"]
"""How a variable's value is read: any text; a word (blanks around it dropped, none left is
unset); seconds above 0; seconds, 0 or more; a flag (any value but empty is yes)."""


def variable(name: str) -> str:
    """The environment variable of field `name` (`lease_seconds` -> `STATEOUS_LEASE_SECONDS`)."""
    return PREFIX + name.upper()


def _text(meaning: str) -> Any:
    return field(default=None, metadata={"kind": "text", "meaning": meaning})


def _word(meaning: str) -> Any:
    return field(default=None, metadata={"kind": "word", "meaning": meaning})


def _seconds(default: float, meaning: str, *, zero: bool = False) -> Any:
    kind = "seconds_or_zero" if zero else "seconds"
    return field(default=default, metadata={"kind": kind, "meaning": meaning})


def _flag(meaning: str) -> Any:
    return field(default=False, metadata={"kind": "flag", "meaning": meaning})


@dataclass(frozen=True)
class Environment:
    """The `STATEOUS_*` variables of this process: each with its type, default and meaning.

    An empty variable counts as unset. Tests shorten the durations (a real
    `serve` or `supervise` cannot wait two minutes for a lease to end); the defaults are the
    documented ones, which `control.settings.Settings`, `Thresholds` and `Timings` start from.
    """

    url: str | None = _text(
        meaning="The control plane of `stateous token …` and `stateous console` when "
        "`--url` is not given; several separated by commas.",
    )
    auth_token: str | None = _word(
        meaning="The bearer token: what `serve` accepts when no "
        "`--auth-token-file` is given, and what `supervise`, `token` and `console` send.",
    )
    actor: str | None = _word(
        meaning="Who acts, for the history and the audit; the console's default "
        "is the login name and host.",
    )
    lease_seconds: float = _seconds(
        120.0, meaning="`serve`: how long a claimed task's lease lasts without a heartbeat."
    )
    tick_seconds: float = _seconds(1.0, meaning="`serve`: between two ticks of the clock.")
    since_seconds: float = _seconds(
        10.0, meaning="`serve`: between two renewals of the clock's hold on the database."
    )
    hold_lapse_seconds: float = _seconds(
        30.0, meaning="`serve`: how long a SQLite hold lasts when not renewed."
    )
    stop_wait_seconds: float = _seconds(
        5.0, meaning="`serve`: how long requests in progress may finish at a graceful stop."
    )
    retain_rest_seconds: float = _seconds(
        0.05,
        meaning="`serve --retain`: the least rest between two batches of its prune (it rests "
        "at least as long as the batch took).",
    )
    retain_idle_seconds: float = _seconds(
        60.0, meaning="`serve --retain`: between two looks for tokens to prune when none was due."
    )
    retain_log_seconds: float = _seconds(
        3600.0, meaning="`serve --retain`: between two log lines of what it pruned."
    )
    supervisor_stale_seconds: float = _seconds(
        30.0, meaning="`serve`: a supervisor silent for this long is `stale`."
    )
    supervisor_gone_seconds: float = _seconds(
        120.0, meaning="`serve`: a supervisor silent for this long is `gone`."
    )
    supervisor_heartbeat: float = _seconds(
        30.0,
        meaning="`supervise`: between two heartbeats of its running tasks (and writes of "
        "its `status.json`).",
    )
    supervisor_idle: float = _seconds(
        1.0, meaning="`supervise`: the wait after a claim that got no task."
    )
    supervisor_max_retry: float = _seconds(
        30.0, meaning="`supervise`: the longest wait between two tries of a call."
    )
    supervisor_wait: float = _seconds(
        10.0, zero=True, meaning="`supervise`: a claim's long-poll wait; 0: none."
    )
    supervisor_beat: float = _seconds(
        10.0, meaning="`supervise`: between two beats of the supervisor."
    )
    debug_point: str | None = _text(
        meaning="`supervise`: the named crash point that kills the process (SIGKILL), for "
        "durability tests, such as `after_outbox_commit:note`; `console`: `console_start` ends "
        "the console on an error as it starts, for tests of its exit code.",
    )
    bench_keep: bool = _flag(
        meaning="The benchmarks keep their temporary folder (any value but empty)."
    )
    bench_cache: str | None = _text(
        meaning="The folder where `bench/scale.py` keeps its million-token preload "
        "(default `/var/tmp/stateous-bench`).",
    )

    #: The fields whose variable was set (not empty), as opposed to left at their default.
    given: frozenset[str] = field(default=frozenset(), metadata={"kind": None})


def variables() -> list[str]:
    """The fields that are variables, in the order of the class (`given` is not one)."""
    return [f.name for f in fields(Environment) if f.metadata.get("kind") is not None]


def kind_of(name: str) -> Kind:
    """How field `name`'s variable is read."""
    kind: Kind = Environment.__dataclass_fields__[name].metadata["kind"]
    return kind


def meaning_of(name: str) -> str:
    """Field `name`'s one-line meaning (docs/reference/environment.md lists them)."""
    meaning: str = Environment.__dataclass_fields__[name].metadata["meaning"]
    return meaning


DEFAULTS = Environment()
"""Every variable's default, whatever the environment holds: the documented durations."""


class InvalidEnvironment(StateousError):
    """A `STATEOUS_*` variable whose value cannot be used; the message names it."""

    code = "invalid_environment"


_FIELDS = tuple(variables())
_NAMES = tuple(variable(name) for name in _FIELDS)
_VARIABLE = dict(zip(_FIELDS, _NAMES, strict=True))
_last: tuple[tuple[str | None, ...], Environment] | None = None


def environment() -> Environment:
    """The variables as the process's environment holds them now.

    Built again only when one of them changed since the last call (tests set them per process
    and per test); raises `InvalidEnvironment` for a value that cannot be used.
    """
    global _last
    values = tuple(map(os.environ.get, _NAMES))
    last = _last
    if last is not None and last[0] == values:
        return last[1]
    found: dict[str, Any] = {}
    for name, raw in zip(_FIELDS, values, strict=True):
        if raw:  # an empty variable counts as unset
            value = _read(name, raw)
            if value is not None:
                found[name] = value
    env = Environment(**found, given=frozenset(found))
    _last = (values, env)
    return env


def value(name: str) -> Any:
    """Field `name`'s value as `environment()` would answer it, reading its variable alone: for
    a check made on every operation (a crash point), where reading all of them would cost."""
    raw = os.environ.get(_VARIABLE[name])
    found = _read(name, raw) if raw else None
    return Environment.__dataclass_fields__[name].default if found is None else found


def _read(name: str, raw: str) -> object:
    """The value of field `name` from its variable's text; None: unset (a blank word)."""
    kind = kind_of(name)
    if kind == "text":
        return raw
    if kind == "word":
        return raw.strip() or None
    if kind == "flag":
        return True
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    zero = kind == "seconds_or_zero"
    if seconds >= 0 if zero else seconds > 0:
        return seconds
    wanted = "a number of seconds, 0 or more" if zero else "a number of seconds above 0"
    raise InvalidEnvironment(
        f"the environment variable {variable(name)} is {raw!r}; it must be {wanted}"
    )
