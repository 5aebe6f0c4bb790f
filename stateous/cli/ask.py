"""The operator's yes before a command changes many tokens at once."""

from __future__ import annotations

import sys

import click

from stateous.model.errors import StateousError


def ask_yes(question: str, no_terminal: str) -> bool:
    """Ask `question` with `[y/N]` on the terminal; True only for `y` or `yes`. Without a
    terminal to ask in, refuse with the sentence `no_terminal` (code `not_confirmed`)."""
    if not sys.stdin.isatty():
        raise StateousError(no_terminal, code="not_confirmed")
    answer = click.prompt(f"{question} [y/N]", default="", show_default=False, prompt_suffix=" ")
    return str(answer).strip().lower() in ("y", "yes")
