"""docs/reference/database.md names every table of the store's metadata with each of its columns,
every index, every migration revision and the version table, so that the reference cannot fall
behind the code."""

from __future__ import annotations

import re
from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import Table

from stateous.control.store import migrate, tables
from stateous.control.store.migrate import VERSION_TABLE

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reference" / "database.md"
MIGRATIONS = Path(migrate.__file__).resolve().parent / "migrations"


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def section_of(table: Table) -> str:
    """The text under the `###` heading that names `table` (a heading may name several)."""
    for part in re.split(r"^### ", page(), flags=re.MULTILINE)[1:]:
        heading = part.split("\n", 1)[0]
        if f"`{table.name}`" in heading:
            return part.split("\n## ", 1)[0]
    raise AssertionError(f"docs/reference/database.md has no section for `{table.name}`")


def revisions() -> list[str]:
    """Every revision id of the migrations, oldest first."""
    script = ScriptDirectory(str(MIGRATIONS))
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def test_every_table_has_a_section_naming_each_of_its_columns() -> None:
    missing: list[str] = []
    for table in tables.metadata.sorted_tables:
        text = section_of(table)
        missing += [f"{table.name}.{c.name}" for c in table.columns if f"`{c.name}`" not in text]
    assert missing == []
    assert len(tables.metadata.sorted_tables) == len(tables.TABLE_NAMES) == 20


def test_every_index_is_named() -> None:
    names = sorted(str(ix.name) for t in tables.metadata.sorted_tables for ix in t.indexes)
    assert [name for name in names if f"`{name}`" not in page()] == []
    assert "tasks_queue" in names and len(names) == 23


def test_every_revision_is_a_row_of_the_revisions_table_in_order() -> None:
    section = page().split("\n## Revisions\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\d{4})` \|", section, re.MULTILINE)
    assert rows == revisions()
    assert rows[0] == "0001"


def test_the_version_table_and_the_last_revision_are_named() -> None:
    assert VERSION_TABLE == "stateous_version"
    assert f"`{VERSION_TABLE}`" in page()
    assert f"`version_num`: `{revisions()[-1]}`" in page()
