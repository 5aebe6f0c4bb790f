"""The `stateous` command: the group, the error convention and a closed stdout."""

from __future__ import annotations

import errno
import gc
import os
import sys

import click


def _rich_help_on_a_terminal() -> None:
    """Give every command Rich's help (colours, panels) when stdout is a terminal.

    rich-click replaces click's classes, so this runs before any command class is made. Piped
    help stays click's plain text, which scripts and tests read.
    """
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        from rich_click.patch import patch

        patch()


_rich_help_on_a_terminal()

# Imported after the patch above, so that LazyGroup and every command take Rich's help.
from stateous.cli.lazy import LazyGroup  # noqa: E402
from stateous.model.errors import INTERRUPTED_EXIT, Interrupted, StateousError  # noqa: E402

CONTEXT_SETTINGS = {"help_option_names": ["--help"], "max_content_width": 100}


@click.group(
    cls=LazyGroup,
    context_settings=CONTEXT_SETTINGS,
    invoke_without_command=False,
    no_args_is_help=True,
    lazy={
        "compile": "stateous.cli.compile:compile_command",
        "serve": "stateous.cli.serve:serve_command",
        "init": "stateous.cli.init:init_group",
        "supervise": "stateous.cli.supervise:supervise_command",
        "token": "stateous.cli.token:token_group",
        "versions": "stateous.cli.versions:versions_command",
        "bulk": "stateous.cli.bulk:bulk_group",
        "schedule": "stateous.cli.schedule:schedule_group",
        "inbox": "stateous.cli.inbox:inbox_command",
        "stats": "stateous.cli.stats:stats_command",
        "console": "stateous.cli.console:console_command",
        "demo": "stateous.cli.demo:demo_command",
        "prune": "stateous.cli.prune:prune_command",
        "import": "stateous.cli.import_tokens:import_command",
    },
)
@click.version_option(package_name="stateous", prog_name="stateous", message="%(prog)s %(version)s")
def cli() -> None:
    """A process as a graph of states. A control plane keeps every token durable."""


def _stdout_closed(exc: OSError) -> bool:
    """Whether `exc` means that the reader of stdout went away."""
    if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
        return True
    # Windows reports a closed pipe as EINVAL, but only a write to stdout counts.
    return os.name == "nt" and exc.errno == errno.EINVAL and not _stdout_usable()


def _stdout_usable() -> bool:
    try:
        sys.stdout.flush()
    except OSError:
        return False
    return True


def _silence_stdout() -> None:
    """Point stdout at the null device, so that the flush at exit cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


def fail(message: str) -> None:
    """Print `error: <message>` on stderr and exit 1: the error convention of every command."""
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def _with_usage_line(exc: click.UsageError, argv: list[str]) -> None:
    """Give `exc` the context of the command that `argv` names, when the parser left it out.

    click's parser raises `Option '--url' requires an argument.` with no context, and a usage
    error without one is shown with no usage line (every usage error must show one)."""
    if exc.ctx is not None:
        return
    ctx = click.Context(cli, info_name="stateous", **cli.context_settings)
    for word in argv:
        group = ctx.command
        command = group.get_command(ctx, word) if isinstance(group, click.Group) else None
        if command is None:
            break
        ctx = click.Context(command, info_name=word, parent=ctx, **command.context_settings)
    exc.ctx = ctx  # show() reads only the context


def _say_interrupted(exc: Interrupted) -> None:
    """Print what an interrupted command did on stderr, then exit with its code."""
    if sys.stderr.isatty():
        click.echo(err=True)  # the terminal echoed `^C` on the current line
    for line in exc.lines:
        click.echo(line, err=True)
    sys.exit(exc.exit_code)


def main(argv: list[str] | None = None) -> None:
    """Run the command; expected errors print one `error:` line and exit 1."""
    try:
        _run(argv)
    finally:
        # Every object is kept from here to the exit: the interpreter's last collection then
        # walks none of them. With Litestar, SQLAlchemy and pydantic imported, that walk cost
        # each `serve` about 0.15 s of CPU at every stop (and each short command its share).
        gc.freeze()


def _run(argv: list[str] | None) -> None:
    """The command, with `error: <message>` and exit 1 for every refusal."""
    try:
        cli.main(args=argv, prog_name="stateous", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Interrupted as exc:
        _say_interrupted(exc)
    except click.Abort as exc:
        # click turns a Ctrl-C that no command noted into Abort (after a newline on stderr).
        if isinstance(exc.__cause__, KeyboardInterrupt):
            click.echo("interrupted", err=True)
            sys.exit(INTERRUPTED_EXIT)
        sys.exit(1)
    except click.exceptions.NoArgsIsHelpError as exc:
        # `stateous`, `stateous init`, `stateous token` alone: their help, as with --help.
        click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
        sys.exit(0)
    except click.ClickException as exc:
        if isinstance(exc, click.UsageError):
            _with_usage_line(exc, sys.argv[1:] if argv is None else argv)
            exc.show()
            sys.exit(exc.exit_code)
        fail(exc.format_message())
    except StateousError as exc:
        fail(exc.message)
    except OSError as exc:
        if not _stdout_closed(exc):
            raise
        _silence_stdout()
        sys.exit(1)
    sys.exit(0)
