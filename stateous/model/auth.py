"""The optional bearer token: reading it from a file or the environment, with the name each
token acts as and its role (`read`, `operate`, `supervise` or `admin`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from stateous.model.environment import environment
from stateous.model.errors import StateousError

__all__ = [
    "ROLES",
    "AuthTokenError",
    "Grant",
    "Role",
    "check_private",
    "grants_from",
    "read_grants",
    "read_token_file",
    "token_from",
]

#: What a token of the control plane's file may do, the narrowest first.
Role = Literal["read", "operate", "supervise", "admin"]
ROLES: tuple[Role, ...] = ("read", "operate", "supervise", "admin")


class AuthTokenError(StateousError):
    """The token file cannot be used; the message is the sentence after `error: `."""

    code = "auth_token"


@dataclass(frozen=True)
class Grant:
    """One token of a control plane's file: its name, the actor of what its requests do
    (None for a plain token), and its role."""

    name: str | None = None
    role: Role = "admin"


def read_token_file(path: Path) -> str:
    """The token in `path`: its text without the whitespace at both ends (a final newline)."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = " ".join(str(getattr(exc, "strerror", None) or exc).split()).lower()
        raise AuthTokenError(f"cannot read the token file {path}: {reason}") from None
    if not text:
        raise AuthTokenError(f"the token file {path} is empty; write the token in it")
    if any(ord(c) < 33 or ord(c) == 127 for c in text):
        raise AuthTokenError(
            f"the token in {path} has spaces or control characters; a token is one word"
        )
    return text


def token_from(path: Path | None) -> str | None:
    """The token of `path` when given, else `STATEOUS_AUTH_TOKEN` when set and not blank."""
    if path is not None:
        return read_token_file(path)
    return environment().auth_token


def _one_word(text: str) -> bool:
    return bool(text) and not any(ord(c) < 33 or ord(c) == 127 for c in text)


def check_private(path: Path) -> None:
    """Refuse a token file that its group or other users may read or write: the
    tokens in it are secrets, whether it holds one token or a line per name."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        reason = " ".join(str(exc.strerror or exc).split()).lower()
        raise AuthTokenError(f"cannot read the token file {path}: {reason}") from None
    if mode & 0o077:
        raise AuthTokenError(
            f"the token file {path} can be read or written by other users than its owner; "
            f"run chmod 600 {path}"
        )


def _grant_of(number: int, path: Path, text: str) -> tuple[str, Grant]:
    """One line of a token file: `token`, `token role`, `name: token` or `name: token role`."""
    head, sep, tail = text.partition(": ")
    name, words = (head.strip(), tail.split()) if sep else (None, text.split())
    named_badly = name is not None and not 1 <= len(name) <= 64
    if not 1 <= len(words) <= 2 or not _one_word(words[0]) or named_badly:
        raise AuthTokenError(
            f"line {number} of the token file {path} is not 'name: token role', 'name: token' "
            "or 'token' (a token is one word; a name has 1 to 64 characters)"
        )
    role = words[1] if len(words) == 2 else "admin"
    if role not in ROLES:
        raise AuthTokenError(
            f"line {number} of the token file {path} gives the role {role!r}; "
            "a role is read, operate, supervise or admin"
        )
    return words[0], Grant(name, role)


def read_grants(path: Path) -> dict[str, Grant]:
    """A control plane's token file: one token a line, `name: token role`,
    where the name and the role may each be left out (no role: `admin`, as before roles).

    Answers each token with its grant. The file must be private to its owner (`check_private`).
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = " ".join(str(getattr(exc, "strerror", None) or exc).split()).lower()
        raise AuthTokenError(f"cannot read the token file {path}: {reason}") from None
    check_private(path)
    found: dict[str, Grant] = {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        token, grant = _grant_of(number, path, text)
        if token in found:
            raise AuthTokenError(f"line {number} of the token file {path} repeats a token")
        found[token] = grant
    if not found:
        raise AuthTokenError(f"the token file {path} is empty; write the token in it")
    return found


def grants_from(path: Path | None) -> dict[str, Grant]:
    """The tokens a control plane accepts with their grants: the file's, else the one of
    `STATEOUS_AUTH_TOKEN` (no name, `admin`); empty when there is neither (no authentication)."""
    if path is not None:
        return read_grants(path)
    token = token_from(None)
    return {} if token is None else {token: Grant()}
