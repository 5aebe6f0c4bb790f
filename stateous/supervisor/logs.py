"""The log lines of `supervise` (spec 50 §1.6): `<time> <logger>: <message>` on stderr."""

from __future__ import annotations

import logging
import sys

__all__ = ["configure_logging"]


def configure_logging() -> None:
    """Put the `stateous` loggers at INFO and the HTTP clients at WARNING.

    A handler is installed only when the root logger has none, so an embedding program's
    configuration wins and configuring twice adds no second handler.
    """
    root = logging.getLogger()
    # `serve --supervise` has configured the `stateous` logger already: add no second handler.
    if not root.handlers and not logging.getLogger("stateous").handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
        root.addHandler(handler)
    logging.getLogger("stateous").setLevel(logging.INFO)
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
