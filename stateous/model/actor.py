"""Who acts, when an operator does not say: one rule for the CLI, Client and console."""

from __future__ import annotations

import getpass
import socket

from stateous.model.environment import environment


def default_actor() -> str:
    """`$STATEOUS_ACTOR`, else the login name and host (`alice@build-box-1`), at most 64 characters."""
    given = environment().actor
    if given:
        return given[:64]
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = "someone"
    return f"{login}@{socket.gethostname()}"[:64]
