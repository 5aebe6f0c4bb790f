"""The control plane's settings, with the documented durations as defaults."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from stateous.model.auth import Grant
from stateous.model.environment import DEFAULTS

DEFAULT_DB_URL = "sqlite:///stateous.db"
DEFAULT_LISTEN = "127.0.0.1:8080"


@dataclass(frozen=True)
class Settings:
    """What `stateous serve` runs with. Tests shorten the durations; the defaults are
    those of the `STATEOUS_*_SECONDS` variables of stateous.model.environment)."""

    graph_path: Path
    db_url: str = DEFAULT_DB_URL
    listen: str = DEFAULT_LISTEN
    lease: timedelta = timedelta(seconds=DEFAULTS.lease_seconds)
    tick: float = DEFAULTS.tick_seconds
    since_every: timedelta = timedelta(seconds=DEFAULTS.since_seconds)
    sqlite_hold_lapse: timedelta = timedelta(seconds=DEFAULTS.hold_lapse_seconds)
    stop_wait: float = DEFAULTS.stop_wait_seconds
    auth_token: str | None = None  # None: no authentication
    #: Every accepted token with its name (the actor of what it does); empty: `auth_token` alone.
    auth_names: tuple[tuple[str, str | None], ...] = ()
    #: Every accepted token with its name and role; empty: `auth_names`, as admin.
    auth_grants: tuple[tuple[str, Grant], ...] = ()
    #: `--replica`: serve beside the holder of a Postgres database.
    replica: bool = False
    #: `--retain DURATION`: prune ended tokens older than this; None: keep all.
    retain: timedelta | None = None
    #: The pace of `--retain`: the least rest between batches, the wait when none was due, and
    #: between two log lines (seconds; the `STATEOUS_RETAIN_*` variables).
    retain_rest: float = DEFAULTS.retain_rest_seconds
    retain_idle: float = DEFAULTS.retain_idle_seconds
    retain_log_every: float = DEFAULTS.retain_log_seconds
