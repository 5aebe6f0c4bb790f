"""Helpers shared by the test suites and the benches: free ports, Postgres databases, and real
`serve` and `supervise` processes."""

from tests.support.databases import backends, postgres_database, sqlite_url
from tests.support.ports import free_port
from tests.support.processes import (
    ROOT,
    ServeProcess,
    Supervise,
    launch_serve,
    serve_process,
    start_supervise,
)

__all__ = [
    "ROOT",
    "ServeProcess",
    "Supervise",
    "backends",
    "free_port",
    "launch_serve",
    "postgres_database",
    "serve_process",
    "sqlite_url",
    "start_supervise",
]
