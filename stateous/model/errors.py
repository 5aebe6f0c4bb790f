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


#: The exit code of a command stopped by Ctrl-C: 128 + SIGINT's number, as a shell reports it.
INTERRUPTED_EXIT = 130

#: What `serve` and `supervise` say when a stop signal comes before they are up.
STOPPED_WHILE_STARTING = "stopped while starting"


class Interrupted(Exception):
    """A command stopped by Ctrl-C (or, while starting, another stop signal): not a failure.

    `lines` say what was done and how to go on; the CLI prints them on stderr and exits with
    `exit_code`: `INTERRUPTED_EXIT` unless a command's own contract says otherwise."""

    def __init__(self, *lines: str, exit_code: int = INTERRUPTED_EXIT) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines
        self.exit_code = exit_code
