"""`stateous prune --export FILE.gz` after a crash in the middle of a page: the torn gzip member
at the end is cut before the next page is appended, so `import` reads every page after it."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

from stateous.cli.prune import _CHECKED, append_durably, complete_gzip_length


def _member(text: str) -> bytes:
    return gzip.compress(text.encode())


def test_the_length_of_the_whole_members() -> None:
    first, second = _member("a\n"), _member("b\n" * 50_000)  # more than one piece of output
    third = _member("c\n")
    assert complete_gzip_length(io.BytesIO(first + second)) == len(first + second)
    torn = first + second + third[: len(third) // 2]
    assert complete_gzip_length(io.BytesIO(torn)) == len(first + second)
    assert complete_gzip_length(io.BytesIO(first + b"\0\0garbage")) == len(first)
    assert complete_gzip_length(io.BytesIO(b"")) == 0
    assert complete_gzip_length(io.BytesIO(first[:5])) == 0


def test_a_page_appended_after_a_torn_member_is_read(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl.gz"
    torn = _member('{"n": 3}\n')
    path.write_bytes(_member('{"n": 1}\n{"n": 2}\n') + torn[: len(torn) - 4])
    _CHECKED.discard(path.resolve())
    append_durably(path, b'{"n": 3}\n')
    append_durably(path, b'{"n": 4}\n')
    with gzip.open(path, "rt") as lines:
        assert lines.read().splitlines() == ['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}']
    with path.open("rb") as raw:
        assert os.path.getsize(path) == complete_gzip_length(raw)
