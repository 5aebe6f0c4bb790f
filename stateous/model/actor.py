"""Who acts, when an operator does not say (spec 80 §1): one rule for the CLI, Client and console."""

from __future__ import annotations

import getpass
import os
import socket

#: The environment variable that names the actor.
ACTOR_ENV = "STATEOUS_ACTOR"


def default_actor() -> str:
    """`$STATEOUS_ACTOR`, else the login name and host (`alice@build-box-1`), at most 64 characters."""
    given = os.environ.get(ACTOR_ENV, "").strip()
    if given:
        return given[:64]
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = "someone"
    return f"{login}@{socket.gethostname()}"[:64]
