"""The log lines of `serve` and `supervise`: `<time> <logger>: <message>`.

One function for both daemons, so that their lines look the same, milliseconds included
(`2026-10-06 23:43:39,848 stateous.supervisor: ...`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

__all__ = ["LOG_FORMAT", "configure_logging"]

LOG_FORMAT = "%(asctime)s %(name)s: %(message)s"
"""The record layout; logging's default time format gives local time with `,mmm`."""


def configure_logging(quiet: Iterable[str] = ()) -> None:
    """Put the `stateous` loggers at INFO and each logger of `quiet` at WARNING.

    A handler is installed only when the root logger has none (and `stateous` has none), so an
    embedding program's configuration wins and configuring twice adds no second handler.
    """
    root = logging.getLogger()
    stateous = logging.getLogger("stateous")
    if not root.handlers and not stateous.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
    stateous.setLevel(logging.INFO)
    for name in quiet:
        logging.getLogger(name).setLevel(logging.WARNING)
