"""The root of Stateous's errors: each carries a stable `code`."""

from __future__ import annotations


class StateousError(Exception):
    """An expected failure with a one-sentence message.

    `code` is the stable refusal code where one exists (for example
    `token_not_active`); the CLI prints `error: <message>` and exits 1.
    """

    code: str = "error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message
