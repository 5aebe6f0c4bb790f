"""The operator's yes before a command changes many tokens at once."""

from __future__ import annotations

import sys

import click

from stateous.model.errors import Interrupted, StateousError


def ask_yes(question: str, no_terminal: str) -> bool:
    """Ask `question` with `[y/N]` on the terminal; True only for `y` or `yes`. Without a
    terminal to ask in, refuse with the sentence `no_terminal` (code `not_confirmed`).

    Ctrl-C at the question ends the command: `cancelled`, exit 130 (`Interrupted`)."""
    if not sys.stdin.isatty():
        raise StateousError(no_terminal, code="not_confirmed")
    try:
        answer = click.prompt(
            f"{question} [y/N]", default="", show_default=False, prompt_suffix=" "
        )
    except click.Abort as exc:
        # click's prompt answers Ctrl-C (and the end of input) with Abort, the cause dropped.
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise Interrupted("cancelled") from None
        raise
    return str(answer).strip().lower() in ("y", "yes")
