"""The log lines of `supervise` (spec 50 §1.6): `<time> <logger>: <message>` on stderr."""

from __future__ import annotations

from stateous.model import logs

__all__ = ["configure_logging"]


def configure_logging() -> None:
    """The `stateous` loggers at INFO; the HTTP client libraries at WARNING only."""
    logs.configure_logging(quiet=("httpx", "httpcore"))
