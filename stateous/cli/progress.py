"""A progress bar for a command that reads a file through: the share of its bytes read and the
tokens done, drawn by rich on stderr when it is a terminal (stdout keeps only the summary)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

#: `advance(position, tokens)`: the bytes of the file read so far, and the tokens done.
Advance = Callable[[int, int], None]


class FileProgress:
    """`with FileProgress("importing", size) as advance: advance(read, tokens)`; nothing is
    drawn when stderr is not a terminal (a pipe, a file, a test)."""

    def __init__(self, label: str, total: int) -> None:
        self.label = label
        self.total = total
        self.bar: Any = None

    def __enter__(self) -> Advance:
        if not sys.stderr.isatty() or self.total == 0:
            return lambda position, tokens: None
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        self.bar = bar = Progress(
            TextColumn(self.label),
            BarColumn(),
            TextColumn("{task.fields[tokens]:,} tokens"),
            console=Console(stderr=True),
            transient=True,
        )
        bar.start()
        task = bar.add_task(self.label, total=self.total, tokens=0)
        return lambda position, tokens: bar.update(task, completed=position, tokens=tokens)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
