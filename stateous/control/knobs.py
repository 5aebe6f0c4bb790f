"""Test knobs of `stateous serve`: environment variables that shorten the spec's fixed durations.

The defaults stay the spec's (spec 20 §4.1); integration and fault-injection tests run real
`serve` processes, and cannot wait two minutes for a lease to end or thirty seconds for a SQLite
hold to lapse. A value that is not a positive number is ignored (the default holds).
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import timedelta

from stateous.control.settings import Settings

#: Environment variable -> (Settings field, whether the field is a timedelta).
KNOBS: dict[str, tuple[str, bool]] = {
    "STATEOUS_LEASE_SECONDS": ("lease", True),
    "STATEOUS_TICK_SECONDS": ("tick", False),
    "STATEOUS_SINCE_SECONDS": ("since_every", True),
    "STATEOUS_HOLD_LAPSE_SECONDS": ("sqlite_hold_lapse", True),
    "STATEOUS_STOP_WAIT_SECONDS": ("stop_wait", False),
}


def _seconds(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value > 0 else None


def with_env_knobs(settings: Settings, environ: dict[str, str] | None = None) -> Settings:
    """`settings` with every knob set in `environ` (default: the process's environment) applied."""
    env = os.environ if environ is None else environ
    changes: dict[str, object] = {}
    for name, (attribute, is_delta) in KNOBS.items():
        value = _seconds(env.get(name))
        if value is not None:
            changes[attribute] = timedelta(seconds=value) if is_delta else value
    return replace(settings, **changes)  # type: ignore[arg-type]  # fields named in KNOBS
