"""A free TCP port on 127.0.0.1; under pytest-xdist, from a block of ports of the worker's own."""

from __future__ import annotations

import itertools
import os
import re
import socket

#: Below Linux's ephemeral range (32768-60999), so no port the OS hands out for a connection
#: or a `:0` bind: each xdist worker `gwN` takes ports from its own block of `BLOCK`.
FIRST = 20000
BLOCK = 1000
LAST = 32767

_next_offset = itertools.count()


def worker_number() -> int | None:
    """The number N of the xdist worker `gwN` this process is, or None outside xdist."""
    found = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    return int(found[1]) if found else None


def free_port() -> int:
    """A port that no socket uses right now.

    Outside xdist the OS picks it. A worker picks from its own block in turn, so two workers
    never pick the same port between one's check and its server's bind.
    """
    number = worker_number()
    if number is None or FIRST + (number + 1) * BLOCK > LAST + 1:
        return _os_port()
    start = FIRST + number * BLOCK
    for _ in range(BLOCK):
        port = start + next(_next_offset) % BLOCK
        if _bindable(port):
            return port
    return _os_port()


def _os_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
