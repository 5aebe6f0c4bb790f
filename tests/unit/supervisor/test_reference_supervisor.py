"""docs/reference/supervisor.md names every key `stateous.yaml` accepts, every public name of the
routine API and every column of the outbox, so that the reference cannot fall behind the code."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

import stateous.supervisor.folder as folder_module
import stateous.supervisor.routine as routine
from stateous.supervisor.folder import FolderError, read_folder
from stateous.supervisor.outbox import Outbox

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reference" / "supervisor.md"
CONTRACT = '__checksum__ = "sha256:' + "0" * 64 + '"\n'
#: A value each documented key accepts.
VALUES = {
    "url": '"http://127.0.0.1:8080"',
    "tasks": "8",
    "name": "box-1",
    "auth_token_file": "token.txt",
}


def section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text.split(f"\n{title}\n", 1)[1].split("\n## ", 1)[0]


def documented_keys() -> list[str]:
    """The first cells of the table under `## stateous.yaml`."""
    return re.findall(r"^\| `([a-z_]+)` \|", section("## `stateous.yaml`"), re.MULTILINE)


def folder_with(tmp_path: Path, yaml: str) -> Path:
    (tmp_path / "contract.py").write_text(CONTRACT, encoding="utf-8")
    (tmp_path / "stateous.yaml").write_text(yaml, encoding="utf-8")
    (tmp_path / "token.txt").write_text("s3cret\n", encoding="utf-8")
    return tmp_path


def test_the_page_lists_the_keys_in_the_codes_order() -> None:
    # The loader's own list of keys: a key added there without a row here fails.
    assert documented_keys() == list(folder_module._KEYS) == list(VALUES)


@pytest.mark.parametrize("key", list(VALUES))
def test_every_documented_key_is_accepted(tmp_path: Path, key: str) -> None:
    lines = {"url": VALUES["url"], key: VALUES[key]}
    yaml = "".join(f"{k}: {v}\n" for k, v in lines.items())
    settings = read_folder(folder_with(tmp_path, yaml))
    assert settings.url == "http://127.0.0.1:8080"


def test_a_key_the_page_does_not_list_is_refused(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, "url: http://127.0.0.1:8080\nworkers: 2\n")
    with pytest.raises(FolderError) as refused:
        read_folder(folder)
    assert refused.value.message == (
        f"cannot use {folder}/stateous.yaml: workers: there is no such setting"
    )
    assert "`KEY: there is no such setting`" in section("## `stateous.yaml`")


def test_every_public_name_of_the_routine_api_is_named() -> None:
    text = PAGE.read_text(encoding="utf-8")
    missing = [name for name in routine.__all__ if f"`{name}" not in text]
    assert missing == []


@pytest.mark.parametrize(
    "cls", [routine.Context, routine.Memory, routine.StateRef, routine.Occurrence]
)
def test_every_public_member_of_the_routines_classes_is_named(cls: type) -> None:
    text = PAGE.read_text(encoding="utf-8")
    own = [
        name
        for name, value in vars(cls).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    ]
    missing = [name for name in own if name not in text]
    assert missing == []


def test_every_column_of_the_outbox_is_named(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path)
    outbox.close()
    with closing(sqlite3.connect(tmp_path / ".stateous" / "outbox.db")) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(messages)")]
    text = section("## The outbox: `.stateous/outbox.db`")
    assert columns and [c for c in columns if f"`{c}`" not in text] == []
