"""Who did it and bulk actions on the command line: `--reason` and `--as` on the
token commands, and `token pause|resume|cancel|retry|fire --where …` (count, first ids, a `[y/N]`
confirmation, a progress bar that follows the job)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from stateous.cli.ask import ask_yes
from stateous.cli.interrupt import on_interrupt
from stateous.cli.params import IsoTime
from stateous.client import Client, Refused
from stateous.model.bulk_statuses import acting_filter, default_text
from stateous.model.environment import environment
from stateous.model.errors import StateousError
from stateous.model.history import by_suffix, local_datetime
from stateous.model.versions import context_hint, refused_counts, refused_line

SHOWN = 10  # ids printed before a confirmation
POLL = 0.3  # seconds between two looks at a running job


class SelectionError(StateousError):
    """A `--where` selection that cannot be used."""

    code = "invalid_argument"


# ---------------------------------------------------------------- who and why


def by_options(func: Callable[..., None]) -> Callable[..., None]:
    """`--reason TEXT` and `--as NAME`."""
    func = click.option(
        "--as", "actor", metavar="NAME", default=None,
        help="Who acts, for the token's history and the audit (default: $STATEOUS_ACTOR; with "
        "--reason alone, your login name and host).",
    )(func)  # fmt: skip
    return click.option(
        "--reason",
        "reason",
        metavar="TEXT",
        default=None,
        help="Why, for the history and the audit.",
    )(func)


def cli_actor(given: str | None) -> str | None:
    """`--as`, else `$STATEOUS_ACTOR` when set; None lets a `--reason` default it."""
    return given or environment().actor


# ---------------------------------------------------------------- the selection


@dataclass(frozen=True)
class Where:
    """The `--where` flags of a token command."""

    where: bool
    status: tuple[str, ...]
    state: tuple[str, ...]
    prefix: str | None
    before: str | None
    after: str | None
    context: tuple[str, ...]
    yes: bool
    dry_run: bool

    @property
    def given(self) -> bool:
        """Whether any selection flag was given."""
        return bool(self.status or self.state or self.prefix or self.before or self.after) or bool(
            self.context or self.yes or self.dry_run
        )


def selection_options(
    *, context: bool = True
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """`--where` and the flags that select tokens; without `context`, no `--context KEY=JSON`
    (`token migrate`, whose `--context JSON` is the context writes)."""
    options = [
        click.option("--where", "where", is_flag=True,
                     help="Act on every top token the flags below select, as one bulk job."),
        click.option("--status", "status", metavar="S", multiple=True,
                     help="With --where: tokens of this status (repeatable). Default: the "
                     "statuses the action acts on (pause: active; resume: paused; cancel, fire: "
                     "active or paused; retry: failed; migrate: active, paused or failed)."),
        click.option("--state", "state", metavar="S", multiple=True,
                     help="With --where: tokens in this state (repeatable)."),
        click.option("--prefix", "prefix", metavar="P", default=None,
                     help="With --where: token ids that start with P."),
        click.option("--before", "before", metavar="TIME", type=IsoTime(), default=None,
                     help="With --where: tokens that entered their state before TIME (ISO 8601)."),
        click.option("--after", "after", metavar="TIME", type=IsoTime(), default=None,
                     help="With --where: tokens that entered their state after TIME (ISO 8601)."),
        click.option("--context", "context", metavar="KEY=JSON", multiple=True,
                     help="With --where: tokens whose context KEY equals the JSON value (repeatable)."),
        click.option("--yes", "yes", is_flag=True, help="With --where: do not ask for a yes."),
        click.option("--dry-run", "dry_run", is_flag=True,
                     help="With --where: print what matches, and stop."),
    ]  # fmt: skip
    if not context:
        del options[6]

    def decorate(func: Callable[..., None]) -> Callable[..., None]:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


where_options = selection_options()
"""`--where` and every flag that selects tokens."""


def where_of(values: dict[str, Any]) -> Where:
    """Take the selection flags out of a command's keyword arguments."""
    names = ("where", "status", "state", "prefix", "before", "after", "context", "yes", "dry_run")
    # A command without `--context KEY=JSON` (`selection_options(context=False)`) selects by none.
    return Where(**{name: values.pop(name, ()) for name in names})


def check_where(where: Where, token_id: str | None) -> None:
    """A token ID or `--where`, not both; the selection flags only with `--where`.

    Each mistake is one of the command line itself: click's usage line and exit 2.
    """
    if where.where and token_id is not None:
        raise usage_error("give a token ID or --where, not both")
    if not where.where and where.given:
        raise usage_error("the selection flags (--status, --state, ...) need --where")
    if not where.where and token_id is None:
        raise usage_error("give a token ID, or --where and the flags that select tokens")


def usage_error(message: str) -> click.UsageError:
    """A mistake in the current command's line: shown with its usage line, exit 2."""
    return click.UsageError(message, ctx=click.get_current_context())


def selection(where: Where) -> dict[str, Any]:
    """The `filter` of `POST /bulk`."""
    found: dict[str, Any] = {}
    if where.status:
        found["status"] = list(where.status)
    if where.state:
        found["state"] = list(where.state)
    if where.prefix is not None:
        found["prefix"] = where.prefix
    if where.before is not None:
        found["entered_before"] = where.before
    if where.after is not None:
        found["entered_after"] = where.after
    if where.context:
        found["context"] = dict(_context_pair(text) for text in where.context)
    return found


def _context_pair(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise SelectionError(f"--context takes KEY=JSON, such as customer='\"acme\"', not {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        raise SelectionError(
            f"--context {key}: {value!r} is not JSON; a text is written in quotes, "
            f"such as {key}='\"{value}\"'"
        ) from None


# The parts of the API's filter, by the flag that gives each one.
FLAGS = {"status": "--status", "state": "--state", "prefix": "--prefix",
         "entered_before": "--before", "entered_after": "--after", "context": "--context"}  # fmt: skip


def in_flags(refused: Refused) -> Exception:
    """The control plane's refusal of a selection, naming the flags the user typed (`--before`,
    not the API's `entered_before`); any other refusal as it is."""
    if refused.code != "invalid_body":
        return refused
    sentence = str(refused)
    for part, flag in FLAGS.items():
        sentence = sentence.replace(f"the filter's {part!r}", flag)
    return StateousError(sentence, code=refused.code)


# ---------------------------------------------------------------- a bulk run


def count_line(matched: int, tokens: Sequence[str], took: str | None = None) -> str:
    """`1,204 tokens match: T-1, T-2, ... and 1,194 more` (the oldest first); with `took`, the
    statuses selected for the user, in brackets: `2 tokens match (active, the status pause acts
    on): T-1, T-2`."""
    said = f" ({took})" if took else ""
    if matched == 0:
        return f"no tokens match{said}"
    shown = list(tokens[:SHOWN])
    more = matched - len(shown)
    noun = "token matches" if matched == 1 else "tokens match"
    tail = f" and {more:,} more" if more > 0 else ""
    return f"{matched:,} {noun}{said}: {', '.join(shown)}{tail}"


def run_where(
    client: Client,
    action: str,
    where: Where,
    reason: str | None,
    event: str | None = None,
    payload: dict[str, Any] | None = None,
    migration: dict[str, Any] | None = None,
) -> None:
    """Count, confirm, start the job and follow it. `migration` is a bulk
    `migrate`'s `to`, `states` and `context`: its dry run's refusals are printed
    before the question, and a selection that is refused whole asks nothing.

    Without `--status`, only the statuses the action acts on are selected (`ACTS_ON`), sent as
    the filter's status: the API's empty filter would take tokens the job could only skip."""
    found, defaulted = acting_filter(action, selection(where))
    parts: dict[str, Any] = {"event": event, "payload": payload, **(migration or {})}
    try:
        preview = client.bulk(action, found, dry_run=True, **parts)
    except Refused as exc:
        raise in_flags(exc) from None
    matched = int(preview.get("matched", 0))
    took = default_text(action) if defaulted else None
    click.echo(count_line(matched, [str(t) for t in preview.get("tokens", [])], took))
    refused = refused_counts(preview)
    if "refused" in preview and matched:
        click.echo(refusals_line(preview, refused))
    if where.dry_run or matched == 0 or sum(refused.values()) >= matched:
        return
    if not where.yes and not _confirmed(action, matched):
        click.echo("nothing done")
        return
    job = client.bulk(action, found, reason=reason, **parts)
    job_id = int(job["job"])
    count = int(job["matched"])
    click.echo(f"job {job_id}: {action} {count:,} {'token' if count == 1 else 'tokens'}")
    # Ctrl-C stops the following, not the job (exit 130).
    with on_interrupt(lambda: [f"the job goes on; see it with: stateous bulk show {job_id}"]):
        final = follow(client, job_id)
    click.echo(summary_line(final))


def refusals_line(preview: dict[str, Any], refused: dict[str, int]) -> str:
    """A migrate's dry run as `refused: …`, with the field a context lacks and the flag that
    gives it (`3 invalid_context: 'priority' is required (ORD-4, ...); add it with --context`)."""
    reasons = preview.get("reasons")
    reason = reasons.get("invalid_context") if isinstance(reasons, dict) else None
    hints = {"invalid_context": context_hint(reason, "--context")} if reason else None
    return refused_line(refused, preview.get("examples"), reasons, hints)


def _confirmed(action: str, matched: int) -> bool:
    noun = "token" if matched == 1 else "tokens"
    return ask_yes(
        f"{action} {matched:,} {noun}?",
        f"{action} {matched:,} {noun} needs a yes, and there is no terminal to ask in; add --yes",
    )


def handled(job: dict[str, Any]) -> int:
    """Tokens acted on or skipped."""
    return int(job.get("done", 0)) + sum(int(n) for n in dict(job.get("skipped", {})).values())


def follow(client: Client, job_id: int) -> dict[str, Any]:
    """Poll the job until it ends; a progress bar on a terminal."""
    job = client.bulk_job(job_id)
    if not sys.stdout.isatty():
        while job["status"] == "running":
            time.sleep(POLL)
            job = client.bulk_job(job_id)
        return job
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn(f"job {job_id} {job['action']}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, transient=True) as progress:
        bar = progress.add_task("job", total=max(1, int(job["matched"])))
        while True:
            progress.update(bar, completed=handled(job))
            if job["status"] != "running":
                return job
            time.sleep(POLL)
            job = client.bulk_job(job_id)


def skipped_text(job: dict[str, Any]) -> str:
    """`4 skipped (token_not_active 3, event_not_allowed 1)`, or `none skipped`."""
    skipped = dict(job.get("skipped", {}))
    total = sum(int(n) for n in skipped.values())
    if not total:
        return "none skipped"
    parts = ", ".join(f"{code} {int(n):,}" for code, n in skipped.items())
    return f"{total:,} skipped ({parts})"


def summary_line(job: dict[str, Any]) -> str:
    """`job 7 finished: 1,200 done, 4 skipped (token_not_active 4)`."""
    return f"job {job['job']} {job['status']}: {int(job['done']):,} done, {skipped_text(job)}"


def show_lines(job: dict[str, Any]) -> list[str]:
    """`bulk show JOB`."""
    event = f" {job['event']}" if job.get("event") else ""
    finished = local_datetime(job["finished_at"]) if job.get("finished_at") else "-"
    return [
        f"job {job['job']}: {job['action']}{event}, {job['status']}" + by_suffix(job.get("by")),
        "filter: " + json.dumps(job.get("filter", {}), ensure_ascii=False),
        f"matched {int(job['matched']):,}, {int(job['done']):,} done, {skipped_text(job)}",
        f"created {local_datetime(job.get('created_at'))}, finished {finished}",
    ]
