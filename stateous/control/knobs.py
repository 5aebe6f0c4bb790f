"""Test knobs of `stateous serve`: the environment's durations applied to its settings.

The defaults stay the documented ones; integration and fault-injection tests run real
`serve` processes, and cannot wait two minutes for a lease to end or thirty seconds for a SQLite
hold to lapse. The knobs are the variables of stateous.model.environment named in `KNOBS`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from stateous.control.settings import Settings
from stateous.model.environment import environment

#: Variable's field -> (Settings field, whether the Settings field is a timedelta).
KNOBS: dict[str, tuple[str, bool]] = {
    "lease_seconds": ("lease", True),
    "tick_seconds": ("tick", False),
    "since_seconds": ("since_every", True),
    "hold_lapse_seconds": ("sqlite_hold_lapse", True),
    "stop_wait_seconds": ("stop_wait", False),
}


def with_env_knobs(settings: Settings) -> Settings:
    """`settings` with each knob set in the environment applied; the others as given.

    Raises `InvalidEnvironment` when a variable's value cannot be used."""
    env = environment()
    changes: dict[str, object] = {}
    for field, (attribute, is_delta) in KNOBS.items():
        if field in env.given:
            seconds: float = getattr(env, field)
            changes[attribute] = timedelta(seconds=seconds) if is_delta else seconds
    return replace(settings, **changes)  # type: ignore[arg-type]  # fields named in KNOBS
