"""Every `STATEOUS_*` environment variable, in one settings object read when needed."""

from __future__ import annotations

import os
from typing import Annotated, Any

from pydantic import AliasGenerator, BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from stateous.model.errors import StateousError

__all__ = ["DEFAULTS", "PREFIX", "Environment", "InvalidEnvironment", "environment", "variable"]

PREFIX = "STATEOUS_"
"""Every variable's name is the prefix and its field's name in capitals."""


def variable(field: str) -> str:
    """The environment variable of `field` (`lease_seconds` -> `STATEOUS_LEASE_SECONDS`)."""
    return PREFIX + field.upper()


def _word(value: object) -> object:
    """Blanks around a text dropped; nothing left is no value (None)."""
    return (value.strip() or None) if isinstance(value, str) else value


def _any_text(value: object) -> object:
    """Any value but an empty one is yes, as `if os.environ.get(...)` reads it."""
    return bool(value) if isinstance(value, str) else value


Word = Annotated[str | None, BeforeValidator(_word)]
Seconds = Annotated[float, Field(gt=0)]
Flag = Annotated[bool, BeforeValidator(_any_text)]


class Environment(BaseSettings):
    """The `STATEOUS_*` variables of this process: each with its type, default and meaning.

    An empty variable counts as unset. The durations shorten the spec's for tests (a real
    `serve` or `supervise` cannot wait two minutes for a lease to end); the defaults are the
    spec's, which `control.settings.Settings`, `Thresholds` and `Timings` start from.
    """

    model_config = SettingsConfigDict(
        alias_generator=AliasGenerator(validation_alias=variable),
        case_sensitive=True,
        env_ignore_empty=True,
        extra="ignore",
        frozen=True,
    )

    url: str | None = Field(
        None,
        description="The control plane of `stateous token …` and `stateous console` when "
        "`--url` is not given; several separated by commas.",
    )
    auth_token: Word = Field(
        None,
        description="The bearer token (spec 70 §5): what `serve` accepts when no "
        "`--auth-token-file` is given, and what `supervise`, `token` and `console` send.",
    )
    actor: Word = Field(
        None,
        description="Who acts, for the history and the audit (spec 80 §1); the console's default "
        "is the login name and host.",
    )
    lease_seconds: Seconds = Field(
        120.0, description="`serve`: how long a claimed task's lease lasts without a heartbeat."
    )
    tick_seconds: Seconds = Field(1.0, description="`serve`: between two ticks of the clock.")
    since_seconds: Seconds = Field(
        10.0, description="`serve`: between two renewals of the clock's hold on the database."
    )
    hold_lapse_seconds: Seconds = Field(
        30.0, description="`serve`: how long a SQLite hold lasts when not renewed."
    )
    stop_wait_seconds: Seconds = Field(
        5.0, description="`serve`: how long requests in progress may finish at a graceful stop."
    )
    supervisor_stale_seconds: Seconds = Field(
        30.0, description="`serve`: a supervisor silent for this long is `stale` (spec 80 §5)."
    )
    supervisor_gone_seconds: Seconds = Field(
        120.0, description="`serve`: a supervisor silent for this long is `gone` (spec 80 §5)."
    )
    supervisor_heartbeat: Seconds = Field(
        30.0,
        description="`supervise`: between two heartbeats of its running tasks (and writes of "
        "its `status.json`).",
    )
    supervisor_idle: Seconds = Field(
        1.0, description="`supervise`: the wait after a claim that got no task."
    )
    supervisor_max_retry: Seconds = Field(
        30.0, description="`supervise`: the longest wait between two tries of a call."
    )
    supervisor_wait: float = Field(
        10.0, ge=0, description="`supervise`: a claim's long-poll wait (spec 70 §2); 0: none."
    )
    supervisor_beat: Seconds = Field(
        10.0, description="`supervise`: between two beats of the supervisor (spec 80 §5)."
    )
    debug_point: str | None = Field(
        None,
        description="`supervise`: the named crash point that kills the process (SIGKILL), for "
        "durability tests, such as `after_outbox_commit:note`.",
    )
    bench_keep: Flag = Field(
        False, description="The benchmarks keep their temporary folder (any value but empty)."
    )


DEFAULTS = Environment.model_construct()
"""Every variable's default, whatever the environment holds: the spec's durations."""


class InvalidEnvironment(StateousError):
    """A `STATEOUS_*` variable whose value cannot be used; the message names it."""

    code = "invalid_environment"


_NAMES = tuple(variable(name) for name in Environment.model_fields)
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
    try:
        found = Environment()
    except ValidationError as exc:
        raise InvalidEnvironment(_sentence(exc.errors()[0])) from None
    _last = (values, found)
    return found


def _sentence(error: Any) -> str:
    """One sentence for pydantic's first error: the variable, its value, what it must be.

    Only the numbers can be refused (any text is a text, and any flag yes or no)."""
    name = str(error["loc"][0])
    field = Environment.model_fields[name.removeprefix(PREFIX).lower()]
    zero = any(getattr(rule, "ge", None) == 0 for rule in field.metadata)
    wanted = "a number of seconds, 0 or more" if zero else "a number of seconds above 0"
    return f"the environment variable {name} is {error.get('input')!r}; it must be {wanted}"
