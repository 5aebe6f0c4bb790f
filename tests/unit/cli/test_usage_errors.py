"""Every command of the CLI answers a mistake in its own line with click's usage line and exit 2,
before it asks any control plane."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import click
import pytest

from stateous.cli.main import cli, main
from stateous.cli.params import IsoTime, Seconds, WholeNumber

# Commands that do their work with no argument at all: their missing value is an option's.
RUN_WITHOUT_ARGUMENTS = {"token show"}
DEAD_URL = "http://127.0.0.1:9"  # nothing listens: a command that asked would exit 1


def leaves(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    """Each command of the tree under `group`, as (`token pause`, its command)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from leaves(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


COMMANDS = dict(leaves(cli))


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run `stateous ARGV` in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    out, err = capsys.readouterr()
    return int(stopped.value.code or 0), out, err


def assert_usage_error(name: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Exit 2, nothing on stdout, click's usage line of `name` first; the `Error:` line."""
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, ""), (argv, err)
    assert err.startswith(f"Usage: stateous {name} "), err
    return err.splitlines()[-1]


def value_option(command: click.Command) -> click.Option:
    """The last option of `command` that takes a value."""
    options = [p for p in command.params if isinstance(p, click.Option) and not p.is_flag]
    return options[-1]


def bad_value(param: click.Parameter) -> str | None:
    """A value the type of `param` refuses, or None for free text."""
    kind = param.type
    if isinstance(kind, WholeNumber | click.IntRange | click.FloatRange) or kind in (
        click.INT,
        click.FLOAT,
    ):
        return "abc"
    if isinstance(kind, Seconds):
        return "soon"
    if isinstance(kind, IsoTime):
        return "yesterday"
    if isinstance(kind, click.Path) and kind.exists:
        return "/no/such/path/here"
    return None


def test_the_walk_finds_every_command() -> None:
    # The tree as this test knows it at least; a new command is walked as well.
    assert {"compile", "serve", "supervise", "init workflow", "init supervisor", "token start",
            "token fire", "token show", "token pause", "token resume", "token cancel",
            "token retry", "token move", "token why", "bulk list", "bulk show", "bulk stop",
            "inbox", "console", "demo", "token migrate", "versions"} <= set(COMMANDS)  # fmt: skip


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_missing_argument(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    command = COMMANDS[name]
    path = name.split()
    has_arguments = any(isinstance(p, click.Argument) for p in command.params)
    if has_arguments and name not in RUN_WITHOUT_ARGUMENTS:
        last = assert_usage_error(name, path, capsys)
        assert last.startswith(("Error: Missing argument", "Error: give a token ID")), last
    else:
        option = value_option(command)
        last = assert_usage_error(name, [*path, option.opts[0]], capsys)
        assert last == f"Error: Option '{option.opts[0]}' requires an argument.", last


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_bad_option_value(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    command = COMMANDS[name]
    path = name.split()
    typed = [
        (p, bad)
        for p in command.params
        if isinstance(p, click.Option) and (bad := bad_value(p)) is not None
    ]
    for option, bad in typed:
        # Given first, so it is checked first: the refusal names this option.
        last = assert_usage_error(name, [*path, option.opts[0], bad], capsys)
        assert last.startswith(f"Error: Invalid value for '{option.opts[0]}': {bad!r} "), last
        # It says what the flag takes, not click's "is not a valid integer range."
        assert "is not a valid" not in last, last
    last = assert_usage_error(name, [*path, "--no-such-option"], capsys)
    assert last == "Error: No such option '--no-such-option'.", last


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["token", "pause"], "give a token ID, or --where and the flags that select tokens"),
        (["token", "resume"], "give a token ID, or --where and the flags that select tokens"),
        (["token", "cancel"], "give a token ID, or --where and the flags that select tokens"),
        (["token", "retry"], "give a token ID, or --where and the flags that select tokens"),
        (["token", "fire", "ORDER-1"], "Missing argument 'EVENT'."),
        (
            ["token", "cancel", "T-1", "--prefix", "T-"],
            "the selection flags (--status, --state, ...) need --where",
        ),
        (["token", "pause", "--dry-run"], "the selection flags (--status, --state, ...) need --where"),
        (["token", "cancel", "--where", "T-1"], "give a token ID or --where, not both"),
        (["token", "fire", "--where", "done", "--key", "k"], "--key fires one token; a bulk fire takes none"),
        (["token", "show", "T-1", "--graph"], "give a token ID or --graph, not both"),
        (["token", "migrate"], "give a token ID, or --where and the flags that select tokens"),
        (["token", "migrate", "T-1", "--map", "review"],
         "Invalid value for '--map': 'review' is not OLD=NEW, such as review=checking"),
        (["token", "migrate", "T-1", "--map", "=checking"],
         "Invalid value for '--map': '=checking' is not OLD=NEW, such as review=checking"),
        (["token", "migrate", "T-1", "--map", "a=b", "--map", "a=c"],
         "--map names the state 'a' twice"),
        (["token", "migrate", "T-1", "--to", "99ab12c"],
         "Invalid value for '--to': '99ab12c' is not a version: give its checksum (sha256:...) or "
         "8 or more of its hex digits, as stateous versions shows them"),
        (["token", "migrate", "T-1", "--to", "sha256:99ab12cg"],
         "Invalid value for '--to': 'sha256:99ab12cg' is not a version: give its checksum "
         "(sha256:...) or 8 or more of its hex digits, as stateous versions shows them"),
        (["token", "migrate", "--where", "T-1"], "give a token ID or --where, not both"),
        (["token", "migrate", "T-1", "--state", "review"],
         "the selection flags (--status, --state, ...) need --where"),
        (["token", "start", "T-1", "--file", "f.csv"], "give a token ID or --file, not both"),
        (["inbox", "--limit", "0"], "Invalid value for '--limit': 0 is not a whole number from 1 to 1000"),
        (["inbox", "--limit", "1001"], "Invalid value for '--limit': 1001 is not a whole number from 1 to 1000"),
        (["bulk", "show", "abc"], "Invalid value for 'JOB': 'abc' is not a whole number, 1 or more"),
        (["bulk", "stop", "0"], "Invalid value for 'JOB': 0 is not a whole number, 1 or more"),
        (
            ["token", "pause", "--where", "--before", "yesterday"],
            "Invalid value for '--before': 'yesterday' is not an ISO 8601 time, such as "
            "2026-10-16T20:48:44Z",
        ),
        (
            ["token", "fire", "--where", "--after", "2026-13-01", "done"],
            "Invalid value for '--after': '2026-13-01' is not an ISO 8601 time, such as "
            "2026-10-16T20:48:44Z",
        ),
    ],
)  # fmt: skip
def test_the_mistakes_of_the_issue(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = " ".join(argv[:2]) if argv[0] in ("token", "bulk") else argv[0]
    last = assert_usage_error(name, [*argv, "--url", DEAD_URL], capsys)
    assert last == f"Error: {error}"


def test_a_migrate_context_that_is_no_json_object_is_an_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # As `token move --context`: a bad JSON argument is an expected error, exit 1.
    code, out, err = run(["token", "migrate", "T-1", "--context", "[1]", "--url", DEAD_URL], capsys)
    assert (code, out) == (1, "")
    assert err == 'error: --context must be a JSON object, such as \'{"repo": "acme/api"}\'\n'


def test_an_error_that_needs_the_control_plane_stays_exit_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["token", "pause", "--where", "--before", "2026-10-16T20:48:44Z",
                          "--url", DEAD_URL], capsys)  # fmt: skip
    assert (code, out) == (1, "")
    assert err.startswith(f"error: cannot reach the control plane at {DEAD_URL}"), err


@pytest.mark.parametrize("text", ["2026-10-16", "2026-10-16T20:48:44Z", "2026-10-16 20:48+02:00"])
def test_an_iso_time_is_passed_on_as_typed(text: str) -> None:
    assert IsoTime().convert(text, None, None) == text
    datetime.fromisoformat(text)  # the control plane's own check takes it too


def test_a_whole_number_in_its_range() -> None:
    assert WholeNumber(1, 1000).convert(" 1000 ", None, None) == 1000
    assert WholeNumber(1).convert(7, None, None) == 7
    with pytest.raises(click.BadParameter, match=r"^True is not a whole number, 1 or more$"):
        WholeNumber(1).convert(True, None, None)


def test_seconds_in_their_range() -> None:
    assert Seconds(0.2, 60).convert("0.2", None, None) == 0.2
    assert Seconds(0.2, 60).convert(60, None, None) == 60.0
    for bad in ("nan", "0.1", "61", "soon"):
        with pytest.raises(click.BadParameter, match=r"is not a number of seconds from 0.2 to 60$"):
            Seconds(0.2, 60).convert(bad, None, None)
