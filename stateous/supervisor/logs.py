"""The log lines of `supervise`: `<time> <logger>: <message>` on stderr."""

from __future__ import annotations

import logging

from stateous.model import logs

__all__ = ["configure_logging"]


def configure_logging(level: str = "info") -> None:
    """The `stateous` loggers at `level` (`debug`, `info`, `warning` or `error`); the HTTP
    client libraries at WARNING only. At INFO a supervisor logs its start, its stop, its
    problems and a line a minute; at DEBUG also two lines per task (its grant, its report)."""
    logs.configure_logging(quiet=("httpx", "httpcore"))
    logging.getLogger("stateous").setLevel(level.upper())
