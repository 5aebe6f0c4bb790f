"""`--listen HOST:PORT`: parsing, binding before the database, and the URL to print."""

from __future__ import annotations

import errno
import ipaddress
import re
import socket
from dataclasses import dataclass

from stateous.model.errors import StateousError

PORT = re.compile(r"[0-9]{1,5}")
LOCAL_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class Listen:
    """A parsed `--listen`: the host (brackets removed) and the port (0 = any free port)."""

    host: str
    port: int
    text: str


def parse_listen(value: str) -> Listen:
    """Split at the last `:`; refuse anything that is not HOST:PORT."""
    problem = StateousError(
        f"--listen {value!r} is not HOST:PORT with a port from 0 to 65535; write, for example, "
        "127.0.0.1:8080 or [::1]:8080"
    )
    host, colon, port_text = value.rpartition(":")
    if not colon or not PORT.fullmatch(port_text) or int(port_text) > 65535:
        raise problem
    if host.startswith("[") or host.endswith("]"):
        inner = host[1:-1] if host.startswith("[") and host.endswith("]") else None
        try:
            ipaddress.IPv6Address(inner or "")
        except ValueError:
            raise problem from None
        host = str(inner)
    elif any(ch in host for ch in ":[]"):
        raise problem
    return Listen(host or "127.0.0.1", int(port_text), value)


def bind(listen: Listen) -> socket.socket:
    """A listening socket, bound before the database is opened; `::` also takes IPv4."""
    try:
        infos = socket.getaddrinfo(
            listen.host, listen.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except OSError as exc:
        raise StateousError(
            f"cannot listen on {listen.host}:{listen.port}: {_reason(exc)}"
        ) from exc
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        # Lets a restart bind at once past TIME_WAIT; never SO_REUSEPORT, so no sharing.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        where = f"{listen.host}:{listen.port}"
        if exc.errno == errno.EADDRINUSE:
            raise StateousError(
                f"cannot listen on {where}: another program already uses that port; stop it, "
                "or choose another port with --listen"
            ) from exc
        raise StateousError(f"cannot listen on {where}: {_reason(exc)}") from exc
    sock.setblocking(False)
    return sock


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def local_url(listen: Listen, sock: socket.socket) -> str:
    """Where a local client reaches the server: `0.0.0.0` → `127.0.0.1`, `::` → `[::1]`."""
    port = sock.getsockname()[1]
    host = listen.host
    if host == "0.0.0.0":
        host = "127.0.0.1"
    elif host == "::":
        host = "[::1]"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def is_wide(listen: Listen) -> bool:
    """Whether other computers may reach this address."""
    return listen.host not in LOCAL_HOSTS
