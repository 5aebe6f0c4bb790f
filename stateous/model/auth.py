"""The optional bearer token of spec 70 §5: reading it from a file or the environment."""

from __future__ import annotations

import os
from pathlib import Path

from stateous.model.errors import StateousError

__all__ = ["AUTH_ENV", "AuthTokenError", "read_token_file", "token_from"]

#: The environment variable that sets the token when no file is named.
AUTH_ENV = "STATEOUS_AUTH_TOKEN"


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


def token_from(path: Path | None, environ: dict[str, str] | None = None) -> str | None:
    """The token of `path` when given, else `STATEOUS_AUTH_TOKEN` when set and not empty."""
    if path is not None:
        return read_token_file(path)
    env = os.environ if environ is None else environ
    return env.get(AUTH_ENV, "").strip() or None
