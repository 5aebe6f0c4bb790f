"""Helpers shared by the test suites: free ports, Postgres databases, a real `serve` process."""

from tests.support.databases import backends, postgres_database, sqlite_url
from tests.support.ports import free_port
from tests.support.serve import ServeProcess, serve_process

__all__ = [
    "ServeProcess",
    "backends",
    "free_port",
    "postgres_database",
    "serve_process",
    "sqlite_url",
]
