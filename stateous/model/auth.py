"""The optional bearer token of spec 70 §5: reading it from a file or the environment."""

from __future__ import annotations

from pathlib import Path

from stateous.model.environment import environment
from stateous.model.errors import StateousError

__all__ = [
    "AuthTokenError",
    "named_tokens_from",
    "read_named_tokens",
    "read_token_file",
    "token_from",
]


class AuthTokenError(StateousError):
    """The token file cannot be used; the message is the sentence after `error: `."""

    code = "auth_token"


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


def read_named_tokens(path: Path) -> dict[str, str | None]:
    """A control plane's token file (spec 80 §1): one token a line, `token` or `name: token`.

    Answers each token with its name (None for a plain token); the name of the token that
    authenticated a request is the actor of what it does.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = " ".join(str(getattr(exc, "strerror", None) or exc).split()).lower()
        raise AuthTokenError(f"cannot read the token file {path}: {reason}") from None
    found: dict[str, str | None] = {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        head, sep, tail = text.partition(": ")
        name, token = (head.strip(), tail.strip()) if sep else (None, text)
        if not _one_word(token) or (name is not None and not 1 <= len(name) <= 64):
            raise AuthTokenError(
                f"line {number} of the token file {path} is not 'token' or 'name: token' "
                "(a token is one word; a name has 1 to 64 characters)"
            )
        if token in found:
            raise AuthTokenError(f"line {number} of the token file {path} repeats a token")
        found[token] = name
    if not found:
        raise AuthTokenError(f"the token file {path} is empty; write the token in it")
    return found


def named_tokens_from(path: Path | None) -> dict[str, str | None]:
    """The tokens a control plane accepts with their names: the file's, else the one of
    `STATEOUS_AUTH_TOKEN` (no name); empty when there is neither (no authentication)."""
    if path is not None:
        return read_named_tokens(path)
    token = token_from(None)
    return {} if token is None else {token: None}
