"""Every `STATEOUS_*` variable in one settings object: its names, docs, values and errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stateous.model.environment import (
    DEFAULTS,
    Environment,
    InvalidEnvironment,
    environment,
    kind_of,
    meaning_of,
    value,
    variable,
    variables,
)

ROOT = Path(__file__).resolve().parents[3]
#: A variable's name in code or docs; `_STATEOUS_COMPLETE` (click's) and `STATEOUS_SUPERVISOR_*`
#: (a family) are not names.
NAME = re.compile(r"(?<![A-Za-z0-9_])STATEOUS_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_*])")
VARIABLES = {variable(name): name for name in variables()}


def names_in_code() -> dict[str, str]:
    """Each name in the package, the console and the benchmarks, with one file it is in."""
    found: dict[str, str] = {}
    for folder in ("stateous", "tui", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for name in NAME.findall(path.read_text(encoding="utf-8")):
                found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_name_in_the_code_is_a_field() -> None:
    found = names_in_code()
    assert "STATEOUS_URL" in found  # the search finds names at all
    unknown = {name: path for name, path in found.items() if name not in VARIABLES}
    assert unknown == {}


#: The test suite's own variables, read by the tests alone (and `.ci/run`'s switch of the long tier).
SUITE_ONLY = {
    "STATEOUS_CI_LONG",
    "STATEOUS_TEST_DB",
    "STATEOUS_WALKTHROUGH_NOW",
    "STATEOUS_FAULTS",
    "STATEOUS_FAULTS_REPORT",
    "STATEOUS_FUZZ_SECONDS",
    "STATEOUS_RANDOM_SEEDS",
    "STATEOUS_RANDOM_STEPS",
}


def test_the_tests_and_the_docs_name_only_fields_or_the_suites_own() -> None:
    """A misspelt variable in a test's environment or the docs would be ignored without this."""
    found: dict[str, str] = {}
    for pattern in ("tests/**/*.py", "docs/**/*.md", "*.md"):
        for path in sorted(ROOT.glob(pattern)):
            for name in NAME.findall(path.read_text(encoding="utf-8")):
                found.setdefault(name, str(path.relative_to(ROOT)))
    assert "STATEOUS_TEST_DB" in found and "STATEOUS_LEASE_SECONDS" in found
    unknown = {n: path for n, path in found.items() if n not in VARIABLES and n not in SUITE_ONLY}
    assert unknown == {}


def shown_type(name: str) -> str:
    return {
        "flag": "flag",
        "seconds": "seconds above 0",
        "seconds_or_zero": "seconds, 0 or more",
    }.get(kind_of(name), "text")


def shown_default(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "yes" if value else "no"
    assert isinstance(value, float)
    return f"{value:g}"


def row(name: str) -> str:
    """The row of docs/reference/environment.md's table for the field `name`."""
    default = Environment.__dataclass_fields__[name].default
    cells = [f"`{variable(name)}`", shown_type(name), shown_default(default)]
    return "| " + " | ".join([*cells, meaning_of(name)]) + " |"


def documented_rows() -> list[str]:
    """The rows of the table under `## The variables` in docs/reference/environment.md."""
    text = (ROOT / "docs" / "reference" / "environment.md").read_text(encoding="utf-8")
    section = text.split("\n## The variables\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_the_reference_lists_every_field_with_its_type_default_and_meaning() -> None:
    expected = [row(name) for name in variables()]
    assert documented_rows() == expected


def test_each_field_says_what_it_means() -> None:
    for name in variables():
        assert meaning_of(name), name
        assert "\n" not in meaning_of(name) and "|" not in meaning_of(name)


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No `STATEOUS_*` variable set (the suite may run under some)."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_unset_variables_are_the_defaults(clean: pytest.MonkeyPatch) -> None:
    assert environment() == DEFAULTS
    assert environment().given == set()
    assert (DEFAULTS.lease_seconds, DEFAULTS.supervisor_wait, DEFAULTS.url) == (120.0, 10.0, None)


def test_a_variable_is_read_again_when_it_changed(clean: pytest.MonkeyPatch) -> None:
    clean.setenv("STATEOUS_LEASE_SECONDS", "3")
    assert environment().lease_seconds == 3.0
    clean.setenv("STATEOUS_LEASE_SECONDS", "2.5")
    assert environment().lease_seconds == 2.5
    assert environment().given == {"lease_seconds"}
    clean.delenv("STATEOUS_LEASE_SECONDS")
    assert environment().lease_seconds == 120.0
    assert DEFAULTS.lease_seconds == 120.0  # the defaults never read the environment


def test_an_empty_variable_is_unset(clean: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        clean.setenv(name, "")
    assert environment() == DEFAULTS


def test_blanks_around_the_token_and_the_actor_are_dropped(clean: pytest.MonkeyPatch) -> None:
    clean.setenv("STATEOUS_AUTH_TOKEN", " s3cret\n")
    clean.setenv("STATEOUS_ACTOR", "   ")
    clean.setenv("STATEOUS_URL", "http://a:1, http://b:2")
    found = environment()
    assert (found.auth_token, found.actor) == ("s3cret", None)
    assert found.url == "http://a:1, http://b:2"  # the URLs' own check splits and reports


def test_any_value_but_empty_is_yes(clean: pytest.MonkeyPatch) -> None:
    clean.setenv("STATEOUS_BENCH_KEEP", "0")
    assert environment().bench_keep is True


def test_a_wait_of_0_is_none(clean: pytest.MonkeyPatch) -> None:
    clean.setenv("STATEOUS_SUPERVISOR_WAIT", "0")
    assert environment().supervisor_wait == 0.0


@pytest.mark.parametrize(
    ("name", "value", "sentence"),
    [
        (
            "STATEOUS_LEASE_SECONDS",
            "3s",
            "the environment variable STATEOUS_LEASE_SECONDS is '3s'; "
            "it must be a number of seconds above 0",
        ),
        (
            "STATEOUS_SUPERVISOR_STALE_SECONDS",
            "0",
            "the environment variable STATEOUS_SUPERVISOR_STALE_SECONDS is '0'; "
            "it must be a number of seconds above 0",
        ),
        (
            "STATEOUS_SUPERVISOR_WAIT",
            "-1",
            "the environment variable STATEOUS_SUPERVISOR_WAIT is '-1'; "
            "it must be a number of seconds, 0 or more",
        ),
    ],
)
def test_a_value_that_cannot_be_used_is_one_sentence(
    clean: pytest.MonkeyPatch, name: str, value: str, sentence: str
) -> None:
    clean.setenv(name, value)
    with pytest.raises(InvalidEnvironment) as refused:
        environment()
    assert (refused.value.message, refused.value.code) == (sentence, "invalid_environment")


def test_one_value_is_read_as_the_whole_environment_reads_it(clean: pytest.MonkeyPatch) -> None:
    assert (value("debug_point"), value("lease_seconds"), value("bench_keep")) == (
        None,
        120.0,
        False,
    )
    clean.setenv("STATEOUS_DEBUG_POINT", "after_outbox_commit:note")
    clean.setenv("STATEOUS_LEASE_SECONDS", "2.5")
    clean.setenv("STATEOUS_ACTOR", "  ")
    clean.setenv("STATEOUS_BENCH_KEEP", "0")
    found = environment()
    for name in ("debug_point", "lease_seconds", "actor", "bench_keep"):
        assert value(name) == getattr(found, name), name
    clean.setenv("STATEOUS_LEASE_SECONDS", "0")
    with pytest.raises(InvalidEnvironment):
        value("lease_seconds")
