"""A free TCP port on 127.0.0.1."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port that no socket uses right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
