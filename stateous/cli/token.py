"""`stateous token …`: start, fire, show, pause, resume and cancel tokens over HTTP."""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click

from stateous.cli.listing import (
    DEFAULT,
    MOST,
    after_option,
    cut_line,
    echo_next,
    limit_option,
    more_than,
)
from stateous.cli.params import StatePair, VersionRef
from stateous.cli.version_names import resolve, version_note, version_rows
from stateous.cli.where import (
    by_options,
    check_where,
    cli_actor,
    run_where,
    selection_options,
    usage_error,
    where_of,
    where_options,
)
from stateous.client import Client, ClientError, NotFound, Refused
from stateous.client.routes import migration
from stateous.client.search import SearchError, search_context, search_pair
from stateous.client.url import DEFAULT_URL
from stateous.model.environment import environment
from stateous.model.errors import StateousError
from stateous.model.history import (
    CHILDREN_LIMIT,
    STYLE_QUIET,
    Line,
    duplicate_line,
    listing_lines,
    show_lines,
    token_line,
)
from stateous.model.versions import context_hint
from stateous.model.wire import TOKEN_STATUSES

JSON_EXAMPLE = """'{"repo": "acme/api"}'"""


class ArgumentError(StateousError):
    """A command-line argument that cannot be used (for example a JSON argument that is no object)."""

    code = "invalid_argument"


# ---------------------------------------------------------------- arguments


def resolve_url(option: str | None) -> str:
    """`--url`, else `STATEOUS_URL` when set and not empty, else `http://127.0.0.1:8080`."""
    if option is not None:
        return option
    return environment().url or DEFAULT_URL


def missing_argument(name: str) -> click.MissingParameter:
    """The error of the current command's argument `name` left out: a syntax mistake,
    so click's usage line and `Missing argument`, exit 2, as for a required argument."""
    ctx = click.get_current_context()
    param = next(p for p in ctx.command.params if p.name == name)
    return click.MissingParameter(ctx=ctx, param=param)


def _reject_constant(word: str) -> Any:
    raise ArgumentError(f"{word} is not a JSON value")


def parse_json_object(name: str, text: str | None) -> dict[str, Any] | None:
    """The JSON object of the argument `name` (None when not given), or `ArgumentError`."""
    if text is None:
        return None
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ArgumentError as exc:
        raise ArgumentError(f"{name} is not valid JSON: {exc.message}") from None
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"{name} is not valid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise ArgumentError(f"{name} is not valid JSON: it is nested too deeply") from None
    if not isinstance(value, dict):
        raise ArgumentError(f"{name} must be a JSON object, such as {JSON_EXAMPLE}")
    return value


@contextmanager
def control_plane(url_option: str | None, actor: str | None = None) -> Iterator[Client]:
    """A `Client` of the resolved URL; a `ClientError` becomes the command's `error:` sentence.

    `actor` (`--as`, else `$STATEOUS_ACTOR`) is sent as `by` with `via: "cli"`."""
    try:
        with Client(
            resolve_url(url_option),
            auth_token=environment().auth_token,
            actor=cli_actor(actor),
            via="cli",
        ) as client:
            yield client
    except ClientError as exc:
        code = getattr(exc, "code", None)
        code = code if isinstance(code, str) else "client"
        raise StateousError(_sentence_of(exc), code=code) from None


def _sentence_of(error: ClientError) -> str:
    """The `error:` sentence of a client error; a `401` says where the CLI's token comes from."""
    if isinstance(error, Refused) and error.status == 401:
        return (
            f"the control plane at {error.url} refused (401): it needs a valid token; set "
            "STATEOUS_AUTH_TOKEN to a token of the file its serve was given with "
            "--auth-token-file"
        )
    return str(error)


# ---------------------------------------------------------------- output


def echo_lines(lines: Sequence[Line]) -> None:
    """Print `lines`: coloured by Rich on a terminal, plain text otherwise (a pipe, a file)."""
    if not sys.stdout.isatty():
        for line in lines:
            click.echo(str(line))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    for line in lines:
        console.print(Text.assemble(*line.segments))


def _objects(items: list[Any], url: str) -> list[dict[str, Any]]:
    """`items` when each is a JSON object; else the control plane's answer is not one of ours."""
    if all(isinstance(item, dict) for item in items):
        return items
    raise wrong_shape(url)


def wrong_shape(url: str) -> StateousError:
    """The error of an answer that is JSON, but not of the shape the control plane sends."""
    return StateousError(
        f"the control plane at {url} sent an answer of the wrong shape; check the URL",
        code="client",
    )


# ---------------------------------------------------------------- commands

_URL_HELP = f"The control plane. Default: $STATEOUS_URL when set, else {DEFAULT_URL}."


def url_option(func: Callable[..., None]) -> Callable[..., None]:
    """The `--url URL` option every token command takes."""
    return click.option("--url", "url", metavar="URL", default=None, help=_URL_HELP)(func)


@click.group(
    "token",
    no_args_is_help=True,
    context_settings={"help_option_names": ["--help"], "max_content_width": 100},
)
def token_group() -> None:
    """Act on tokens: start, fire, show, pause, resume, cancel."""


@token_group.command("start")
@click.argument("token_id", metavar="ID", required=False)
@click.argument("context_json", metavar="[CONTEXT_JSON]", required=False)
@click.option(
    "--file",
    "file",
    metavar="FILE",
    default=None,
    help="Start every token of FILE: JSON Lines, or CSV with a 'token' column and one column "
    "per context key.",
)
@by_options
@url_option
def start_command(
    token_id: str | None,
    context_json: str | None,
    file: str | None,
    url: str | None,
    reason: str | None,
    actor: str | None,
) -> None:
    """Start a token. Starting one that exists shows it.

    CONTEXT_JSON is the token's context, a JSON object (default {}). An existing token is shown
    as it is: nothing is started and the context is ignored. With --file, every token of the
    file is started (existing ones are left as they are), and a summary is printed.
    """
    if file is not None:
        if token_id is not None or context_json is not None:
            raise usage_error("give a token ID or --file, not both")
        with control_plane(url, actor) as client:
            _start_file(client, file, reason)
        return
    if token_id is None:
        raise missing_argument("token_id")
    context = parse_json_object("CONTEXT_JSON", context_json)
    with control_plane(url, actor) as client:
        answer = client.start(token_id, context, reason=reason)
    echo_lines([token_line(answer)])


def _start_file(client: Client, file: str, reason: str | None) -> None:
    """`token start --file FILE`: the summary and refusals; exit 1 on a refusal."""
    from pathlib import Path

    from stateous.cli.token_file import print_tally, start_file

    tally = start_file(client, Path(file), reason)
    print_tally(tally)
    if tally.refusals:
        sys.exit(1)


@token_group.command("fire")
@click.argument("token_id", metavar="[ID]")
@click.argument("event", metavar="EVENT", required=False)
@click.argument("payload_json", metavar="[PAYLOAD_JSON]", required=False)
@by_options
@where_options
@click.option(
    "--key",
    "key",
    metavar="K",
    default=None,
    help="Idempotency key (1 to 256 characters): the same key fires once per token, for good.",
)
@url_option
def fire_command(
    token_id: str,
    event: str | None,
    payload_json: str | None,
    key: str | None,
    url: str | None,
    reason: str | None,
    actor: str | None,
    **flags: Any,
) -> None:
    """Fire an event on a token.

    With --where, on every token selected: `fire --where ... EVENT [PAYLOAD_JSON]`.
    PAYLOAD_JSON is the event's payload, a JSON object. A paused token holds the event until it
    is resumed. A repeated --key changes nothing and prints `duplicate: ` and the token.
    """
    where = where_of(flags)
    if where.where:
        # `fire --where EVENT [PAYLOAD_JSON]`: the arguments move one place to the left.
        token_id, event, payload_json = None, token_id, event  # type: ignore[assignment]
        if key is not None:
            raise usage_error("--key fires one token; a bulk fire takes none")
        payload = parse_json_object("PAYLOAD_JSON", payload_json)
        with control_plane(url, actor) as client:
            run_where(client, "fire", where, reason, event, payload)
        return
    check_where(where, token_id)
    if event is None:
        raise missing_argument("event")
    payload = parse_json_object("PAYLOAD_JSON", payload_json)
    with control_plane(url, actor) as client:
        answer = client.fire(token_id, event, payload, key=key, reason=reason)
        if answer.get("duplicate") is True:
            token = answer.get("token")
            if not isinstance(token, dict):
                raise wrong_shape(client.url)
            echo_lines([duplicate_line(token)])
            return
    echo_lines([token_line(answer)])


@token_group.command("show")
@click.argument("token_id", metavar="[ID]", required=False)
@click.option("--graph", is_flag=True, help="Print the workflow as a Mermaid diagram.")
@limit_option("tokens", when="With no ID")
@after_option("tokens")
@url_option
def show_command(
    token_id: str | None, graph: bool, limit: int | None, after: str | None, url: str | None
) -> None:
    """\b
    Show a token, its children and its history. With no ID, list the tokens. With --graph, draw the workflow.

    Times are shown in this computer's time zone. The listing shows at most 100 tokens (--limit),
    the most recently moved first, and says how many more there are; when more follow, it
    prints on stderr the --after that lists them.
    """
    if token_id is not None and graph:
        raise usage_error("give a token ID or --graph, not both")
    if (limit is not None or after is not None) and (token_id is not None or graph):
        option = "--limit" if limit is not None else "--after"
        raise usage_error(f"{option} is for the listing: give no ID and no --graph")
    with control_plane(url) as client:
        if graph:
            _show_graph(client)
        elif token_id is None:
            _show_listing(client, limit, after)
        else:
            _show_token(client, token_id)


def _show_listing(client: Client, limit: int | None, after: str | None) -> None:
    """The most recently moved tokens, then how many more there are when the first page is
    cut (a later page's count is unknown: the next page's cursor says that more follow)."""
    page = client.tokens(limit=limit, after=after)
    tokens = _objects(page, client.url)
    shown = limit or DEFAULT
    more = more_than(len(tokens), shown, lambda: _token_count(client)) if after is None else 0
    cut = [Line(((cut_line(more, shown), STYLE_QUIET),))] if more else []
    echo_lines([*listing_lines(tokens), *cut])
    echo_next(page)


def _token_count(client: Client) -> int:
    """Every token, of every status (the listing has children too), as `GET /stats` counts."""
    counts = client.stats().get("tokens")
    if not isinstance(counts, dict):
        raise wrong_shape(client.url)
    return sum(n for n in counts.values() if isinstance(n, int))


def _show_token(client: Client, token_id: str) -> None:
    token = client.get(token_id)
    children = _objects(client.tokens(parent=token_id, limit=CHILDREN_LIMIT), client.url)
    history = _objects(client.history(token_id), client.url)
    first, *rest = show_lines(token, children, history)
    note = version_note(token, _versions(client)) if "structure" in token else ""
    # The token's trace, under its line, when it has one.
    trace = [Line(((f"  trace {token['trace_id']}", STYLE_QUIET),))] if "trace_id" in token else []
    echo_lines([Line((*first.segments, (note, STYLE_QUIET))) if note else first, *trace, *rest])


def _versions(client: Client) -> list[dict[str, Any]]:
    """The versions on record; none from a control plane that has no such route (older)."""
    try:
        return version_rows(client)
    except NotFound:
        return []


def _show_graph(client: Client) -> None:
    # Looked up when used: only --graph needs the diagram's module.
    mermaid = importlib.import_module("stateous.model.mermaid").mermaid
    text = str(mermaid(client.workflow()))
    click.echo(text if text.endswith("\n") else text + "\n", nl=False)


# ---------------------------------------------------------------- find


class SearchPair(click.ParamType[tuple[str, Any]]):
    """`KEY=VALUE` of `token find`: VALUE is JSON when it reads as JSON, else text."""

    name = "KEY=VALUE"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, Any]:
        """(key, value), or click's usage error (exit 2)."""
        try:
            return search_pair(str(value))
        except SearchError as exc:
            self.fail(str(exc), param, ctx)


@token_group.command("find")
@click.argument("pairs", metavar="KEY=VALUE...", nargs=-1, required=True, type=SearchPair())
@click.option(
    "--status",
    "status",
    metavar="S",
    type=click.Choice(TOKEN_STATUSES),
    default=None,
    help="Only tokens of this status: " + ", ".join(TOKEN_STATUSES) + ".",
)
@limit_option("tokens")
@after_option("tokens")
@url_option
def find_command(
    pairs: tuple[tuple[str, Any], ...],
    status: str | None,
    limit: int | None,
    after: str | None,
    url: str | None,
) -> None:
    """Find tokens by their context: every KEY=VALUE must hold.

    VALUE is JSON when it reads as JSON (4711, true, "acme"), else text: customer=acme is the
    text "acme", order_id=4711 the number. Only the keys the workflow searches by (flow.search)
    can be used. The tokens are listed as `token show` lists them, the most recently moved first.
    """
    try:
        context = search_context(pairs)
    except SearchError as exc:
        raise usage_error(str(exc)) from None
    with control_plane(url) as client:
        page = client.tokens(status=status, limit=limit, context=context, after=after)
        found = _objects(page, client.url)
        shown = limit or DEFAULT
        more, at_least = 0, False
        if after is None:
            more, at_least = _more_found(client, status, context, len(found), shown)
    cut = [Line(((cut_line(more, shown, at_least=at_least), STYLE_QUIET),))] if more else []
    echo_lines([*listing_lines(found), *cut])
    echo_next(page)


def _more_found(
    client: Client, status: str | None, context: dict[str, Any], page: int, shown: int
) -> tuple[int, bool]:
    """How many tokens beyond the `shown` (0: none), and whether that is only the least there is.

    A search tells no total: a cut page's tokens are counted by finding as many as one listing
    gives."""
    listed: list[int] = []

    def count() -> int:
        listed.append(len(client.tokens(status=status, limit=MOST, context=context)))
        return listed[0]

    more = more_than(page, shown, count)
    return more, bool(listed) and listed[0] >= MOST


def _steer(action: str, summary: str) -> click.Command:
    """`token pause|resume|cancel ID`: one POST, then the token's line; with `--where`, a bulk
    job over every token selected."""

    @url_option
    @by_options
    @where_options
    def command(
        token_id: str | None, url: str | None, reason: str | None, actor: str | None, **flags: Any
    ) -> None:
        where = where_of(flags)
        check_where(where, token_id)
        with control_plane(url, actor) as client:
            if where.where:
                run_where(client, action, where, reason)
                return
            answer = getattr(client, action)(token_id, reason=reason)
        echo_lines([token_line(answer)])

    # The first paragraph is the command's documented summary, exactly; --where is said below it.
    command.__doc__ = summary + "\n\nWith --where, every token the flags select, as one bulk job."
    command = click.argument("token_id", metavar="[ID]", required=False)(command)
    return token_group.command(action)(command)


pause_command = _steer(
    "pause", "Pause a token: its events are held, its tasks wait, its timers stand still."
)
resume_command = _steer("resume", "Resume a paused token: the held events apply in order.")
cancel_command = _steer("cancel", "Cancel a token for good.")


# ---------------------------------------------------------------- repair


retry_command = _steer(
    "retry",
    "Retry a failed token where it failed. It enters that state again, as a new visit.",
)


@token_group.command("move")
@click.argument("token_id", metavar="ID")
@click.argument("state", metavar="STATE")
@click.option(
    "--context",
    "context_json",
    metavar="JSON",
    default=None,
    help="Context writes, a JSON object: each key replaces the context's value.",
)
@url_option
@by_options
def move_command(
    token_id: str,
    state: str,
    context_json: str | None,
    url: str | None,
    reason: str | None,
    actor: str | None,
) -> None:
    """Move a token by hand to STATE, a state of its workflow.

    The work of its current state is cancelled, and STATE is entered as a new visit. A failed
    token becomes active; a paused token stays paused.
    """
    context = parse_json_object("--context", context_json)
    with control_plane(url, actor) as client:
        answer = client.move(token_id, state, context, reason=reason)
    echo_lines([token_line(answer)])


def state_map(pairs: Sequence[tuple[str, str]]) -> dict[str, str] | None:
    """`--map OLD=NEW ...` as the `states` of a migration (None when not given); a state mapped
    twice is a mistake of the command line (exit 2)."""
    states: dict[str, str] = {}
    for old, new in pairs:
        if old in states:
            raise usage_error(f"--map names the state {old!r} twice")
        states[old] = new
    return states or None


@token_group.command("migrate")
@click.argument("token_id", metavar="[ID]", required=False)
@click.option(
    "--to",
    "to",
    metavar="CHECKSUM",
    type=VersionRef(),
    default=None,
    help="The version to move to: its checksum (sha256:...) or 8 or more of its hex digits, as "
    "stateous versions shows them. Default: the current version.",
)
@click.option(
    "--map",
    "mapping",
    metavar="OLD=NEW",
    type=StatePair(),
    multiple=True,
    help="A token in the state OLD enters NEW, a state of the new version (repeatable). A state "
    "not named keeps its name.",
)
@click.option(
    "--context",
    "writes",
    metavar="JSON",
    default=None,
    help="Context writes, a JSON object: each key replaces the context's value before the new "
    "version checks the context.",
)
@by_options
@selection_options(context=False)
@url_option
def migrate_command(
    token_id: str | None,
    to: str | None,
    mapping: tuple[tuple[str, str], ...],
    writes: str | None,
    url: str | None,
    reason: str | None,
    actor: str | None,
    **flags: Any,
) -> None:
    """Move a token to another version of the workflow (default: the current one).

    Everything is checked before anything is written. The work of its current state is
    cancelled, and its state (after --map) is entered as a new visit on the new version; a
    paused token stays paused, a failed one stays failed (retry it then). With --where, every
    token the flags select, as one bulk job: the dry run's refusals are printed first.
    """
    where = where_of(flags)
    check_where(where, token_id)
    states = state_map(mapping)
    context = parse_json_object("--context", writes)
    with control_plane(url, actor) as client:
        target = None if to is None else resolve(client, to)
        if where.where:
            run_where(
                client, "migrate", where, reason, migration=migration(target, states, context)
            )
            return
        try:
            answer = client.migrate(str(token_id), target, states, context, reason=reason)
        except Refused as exc:
            raise in_map_words(exc) from None
    echo_lines([token_line(answer)])


_STATES_PART = re.compile(r"'states': \{'([^']*)': …\}")


def in_map_words(refused: Refused) -> Exception:
    """A migration's refusal naming the flag the user typed (`--map testing=<state>`, not the
    API's `'states': {'testing': …}`), or the flag that gives a context field (`; add it with
    --context`); any other refusal as it is."""
    if refused.code == "invalid_context" and "context model" in refused.message:
        hint = context_hint(refused.message, "--context")
        return StateousError(f"{refused}; {hint}", code=refused.code)
    if refused.code != "unknown_state":
        return refused
    sentence = _STATES_PART.sub(r"--map \1=<state>", str(refused))
    return StateousError(sentence.replace("'states' maps", "--map maps"), code=refused.code)


@token_group.command("why")
@click.argument("token_id", metavar="ID")
@url_option
def why_command(token_id: str, url: str | None) -> None:
    """Show why a token is not moving.

    Prints the token's line, then one line per finding, the most important first.
    """
    from stateous.model.findings import finding_lines

    with control_plane(url) as client:
        answer = client.why(token_id)
        token, findings = answer.get("token"), answer.get("findings")
        if not isinstance(token, dict) or not isinstance(findings, list):
            raise wrong_shape(client.url)
        echo_lines([token_line(token), *finding_lines(_objects(findings, client.url))])
