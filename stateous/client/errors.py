"""The errors of the Python client: one sentence each, `Refused` with `.code`."""

from __future__ import annotations


class ClientError(Exception):
    """Base of the client's errors; also a bad URL or an answer that is not the control plane's.

    `str(error)` is one sentence, the same that `stateous token …` prints after `error: `.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.sentence = message

    def __str__(self) -> str:
        return self.sentence


class Unreachable(ClientError):
    """No answer: a network failure, nothing listening at the URL, or the wait ran out.

    `.detail` says why, without the URL (the console shows it beside the URL it names).
    """

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = message if detail is None else detail


class Refused(ClientError):
    """The control plane answered with an HTTP status of 400 or more.

    `.status` is the HTTP status, `.message` the answer's `error` sentence (for people; it may
    change), `.code` the stable refusal code (for programs; `None` when the answer has none,
    for example from a proxy). Branch on `.code`, never on `.message`.
    """

    def __init__(self, status: int, message: str, *, url: str, code: str | None = None) -> None:
        super().__init__(f"the control plane at {url} refused ({status}): {message}")
        self.status = status
        self.message = message
        self.url = url
        self.code = code


class NotFound(Refused):
    """Status 404: no such token, task or path."""
