"""Ctrl-C in a long command: say what was done and how to go on, then exit 130.

A command wraps its long part in `on_interrupt(note)`: a Ctrl-C there becomes `Interrupted`
with the lines `note()` gives at that moment, which `stateous.cli.main` prints on stderr before
it exits 130. A step that must not stop half-way (a page written and then pruned, a batch of
starts and its answers) runs inside `finish_first()`, so that the first Ctrl-C lets it end and
the note counts exactly what happened; a second Ctrl-C stops at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from stateous.model.errors import INTERRUPTED_EXIT, Interrupted

__all__ = ["Interrupted", "finish_first", "on_interrupt"]


@contextmanager
def on_interrupt(
    note: Callable[[], Sequence[str]], exit_code: int = INTERRUPTED_EXIT
) -> Iterator[None]:
    """Turn a Ctrl-C inside the block into `Interrupted(*note())`, exit `exit_code` (130)."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(*note(), exit_code=exit_code) from None


@contextmanager
def finish_first() -> Iterator[None]:
    """Hold a first Ctrl-C until the block has ended, then raise it (KeyboardInterrupt).

    A second Ctrl-C inside the block raises at once, so a step that hangs (a control plane
    that does not answer) can still be left. Outside the main thread signals cannot be
    caught, and the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed = False

    def hold(_signum: int, _frame: FrameType | None) -> None:
        nonlocal pressed
        if pressed:
            raise KeyboardInterrupt
        pressed = True

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        raise KeyboardInterrupt
