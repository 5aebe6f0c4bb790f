"""The progress bar of a long command (`token start --file`, `prune`, `import`): drawn by rich on
stderr when it is a terminal, so that stdout keeps only the summary; nothing otherwise (a pipe,
a file, a test)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

#: `update(advance=n)` or `update(completed=n, tokens=m)`: rich's task fields.
Update = Callable[..., None]

#: The counts shown right of the bar: tokens done, done of the whole, and tokens beside bytes.
TOKENS = "{task.completed:,} tokens"
OF_TOTAL = "{task.completed}/{task.total}"
TOKENS_FIELD = "{task.fields[tokens]:,} tokens"


class Progress:
    """`with Progress("pruning", total, TOKENS) as update: update(advance=n)`.

    `total` None is a whole not known (rich pulses the bar); 0 draws nothing. `count` is the
    text right of the bar, one of this module's formats."""

    def __init__(self, label: str, total: int | None, count: str) -> None:
        self.label = label
        self.total = total
        self.count = count
        self.bar: Any = None

    def __enter__(self) -> Update:
        if not sys.stderr.isatty() or self.total == 0:
            return lambda **_fields: None
        from rich.console import Console
        from rich.progress import BarColumn, TextColumn
        from rich.progress import Progress as RichProgress

        self.bar = bar = RichProgress(
            TextColumn(self.label),
            BarColumn(),
            TextColumn(self.count),
            console=Console(stderr=True),
            transient=True,
        )
        bar.start()
        task = bar.add_task(self.label, total=self.total, tokens=0)
        return lambda **fields: bar.update(task, **fields)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
