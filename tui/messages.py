"""The messages the console's screens and widgets send each other."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class TokenChanged(Message):
    """A steering action answered with this token: views that show it refresh at once."""

    def __init__(self, token: dict[str, Any]) -> None:
        super().__init__()
        self.token = token


class OpenToken(Message):
    """Open the token screen of this token id."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token
