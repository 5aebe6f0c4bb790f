"""The check of a control plane's URL, before any request."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from urllib.parse import SplitResult, urlsplit

from stateous.client.errors import ClientError

SHOWN_URL_LIMIT = 100
"""A longer URL is shown in a sentence as its first 100 characters and `...`."""
DEFAULT_URL = "http://127.0.0.1:8080"
"""The control plane's address when neither `--url` nor `STATEOUS_URL` gives one."""

HOST_RULE = "a host has only letters, digits, '-' and '.', or is an IP address"
_LABEL = re.compile(r"[A-Za-z0-9_-]+")


def shown(url: str) -> str:
    """`url` as a sentence shows it: cut to 100 characters and `...` when longer."""
    return url if len(url) <= SHOWN_URL_LIMIT else url[:SHOWN_URL_LIMIT] + "..."


def check_url(url: str) -> str:
    """Return `url` without trailing `/`, or raise `ClientError` when it cannot be used."""
    url = url.rstrip("/")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # reading the port is what checks it
    except ValueError as exc:
        raise ClientError(f"{shown(url)} is not a URL: {_detail(exc)}") from None
    problem = _problem(parts)
    if problem is not None:
        raise ClientError(f"{shown(url)} is not a URL: {problem}")
    if not valid_host(parts.hostname or ""):
        raise ClientError(f"{shown(url)} has a host that is not valid: {HOST_RULE}")
    return url


def split_urls(value: str | Sequence[str]) -> list[str]:
    """Several control planes' URLs: a list, or one string of URLs separated by
    commas (`STATEOUS_URL`, `--url`, `url:` in stateous.yaml); blanks around each are dropped."""
    parts = value.split(",") if isinstance(value, str) else list(value)
    return [part.strip() for part in parts if part.strip()]


def check_urls(value: str | Sequence[str]) -> list[str]:
    """Each URL of `value` checked as `check_url` does; at least one (else `ClientError`)."""
    urls = [check_url(url) for url in split_urls(value)]
    if not urls:
        raise ClientError(
            "no control plane URL was given; write, for example, http://127.0.0.1:8080"
        )
    return urls


def _detail(exc: ValueError) -> str:
    text = str(exc)
    if "IPv6" in text:
        return "the IPv6 address in brackets is not closed or not valid"
    if "Port" in text or "port" in text:
        return f"the port is not a number from 0 to 65535 ({text})"
    return text


def _problem(parts: SplitResult) -> str | None:
    """Why a parsed URL is no control plane's address, or None."""
    if parts.scheme not in ("http", "https"):
        return "it must start with http:// or https://, as in http://127.0.0.1:8080"
    if not parts.netloc or parts.hostname is None or parts.hostname == "":
        return "it names no host, as in http://127.0.0.1:8080"
    if parts.username is not None or parts.password is not None:
        return "it may not carry a user name or a password"
    if parts.query or parts.fragment:
        return "it may not have a query (?) or a fragment (#)"
    return None


def valid_host(host: str) -> bool:
    """An IPv4 or IPv6 address (brackets allowed), or dot-separated labels of ASCII letters,
    digits, `-` and `_` (a trailing dot allowed)."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(bare)
    except ValueError:
        pass
    else:
        return "%" not in bare
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    return all(label.isascii() and _LABEL.fullmatch(label) for label in labels)
