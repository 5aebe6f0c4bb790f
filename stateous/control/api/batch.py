"""The batch routes: claims of several tasks, several messages, many starts.

Each message and each start is its own operation, with exactly the checks, ledger rows and
refusals of its single route, built by the same body parsers and engine functions. They are run
in list order by `run_in_order`, queued together for the shared transactions
(`Plane.run_many_async`); a refusal answers that operation alone.

One rule keeps each task's messages in order: once a message of a
task fails for the moment (a `5xx`, or a fault), the later messages of that task in the batch are
not applied and are answered `503 database_busy` too, so the supervisor sends them again behind
it, in order, instead of finding them applied before it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from litestar import Request, Response, get, post
from litestar.types import Receive
from sqlalchemy import Connection

from stateous.control import tracing
from stateous.control.api import bodies, longpoll
from stateous.control.api.acts import actor_of, by_of
from stateous.control.api.answers import answer, known_id, plane_of, read_body, reply, run
from stateous.control.engine import reads
from stateous.control.engine.claim import claim_many
from stateous.control.engine.memory import write_memory
from stateous.control.engine.note import note
from stateous.control.engine.report import report
from stateous.control.engine.start import Started, start
from stateous.control.engine.start_many import Raced, StartArgs, start_many, starts_in_bulk
from stateous.control.engine.views import token_wire
from stateous.control.errors import DatabaseBusy, Refusal
from stateous.control.plane import Plane, parts
from stateous.control.starts_together import keep_traces

Reply = tuple[int, Any]
"""An operation's answer: its HTTP status and body (None for a `204`)."""


@dataclass(frozen=True)
class Operation:
    """One operation of a batch: `work` runs in its own transaction as engine call `call`;
    `refused` is a refusal found before any transaction (a body its single route refuses);
    `task` is the task a message names (its messages keep their order), None for a start."""

    call: str
    work: Callable[[Connection], Reply] | None = None
    refused: Refusal | None = None
    task: int | None = None


class Halts:
    """Which tasks of a batch have a message that failed for the moment, and from which index
    on: the messages of such a task after that one are answered `503 database_busy` unapplied.

    An operation may run twice (a deadlock reruns its shared transaction one by one), so a
    failure is recorded by index and forgotten when that same message then succeeds.
    """

    def __init__(self) -> None:
        self._first: dict[int, int] = {}  # task -> index of its first message that failed

    def blocks(self, task: int, index: int) -> bool:
        """Whether an earlier message of `task` failed for the moment."""
        first = self._first.get(task)
        return first is not None and first < index

    def fail(self, task: int, index: int) -> None:
        """The message at `index` of `task` failed for the moment (a `5xx` or a fault)."""
        self._first[task] = min(index, self._first.get(task, index))

    def clear(self, task: int, index: int) -> None:
        """The message at `index` of `task` ran after all (a rerun after a deadlock)."""
        if self._first.get(task) == index:
            del self._first[task]


def for_good(exc: BaseException) -> bool:
    """Whether an operation's failure is an answer for good (a `4xx` refusal): any other (a
    `5xx`, a database error, a fault) may not happen again, so the message will be sent again."""
    return isinstance(exc, Refusal) and exc.status < 500


def in_turn(
    work: Callable[[Connection], Any], task: int, index: int, halts: Halts
) -> Callable[[Connection], Any]:
    """`work` of the message at `index`, not applied (`database_busy`) once an earlier message
    of its task failed for the moment; its own such failure halts the task's later messages."""

    def guarded(conn: Connection) -> Any:
        if halts.blocks(task, index):
            raise DatabaseBusy()
        try:
            reply = work(conn)
        except Exception as exc:
            if not for_good(exc):
                halts.fail(task, index)
            raise
        halts.clear(task, index)
        return reply

    return guarded


def envelope(exc: Refusal) -> dict[str, Any]:
    """The refusal envelope: `{"error": sentence, "code": code}`."""
    return {"error": exc.message, "code": exc.code}


async def run_in_order(plane: Plane, operations: Sequence[Operation]) -> list[dict[str, Any]]:
    """Apply the operations in list order, queued together for the shared transactions (each
    its own savepoint, all answered after their commit); a refusal is that operation's
    answer and does not stop the ones after it, except that a task's messages stop at the first
    that failed for the moment (`Halts`). Answers `{"status", "body"}` each."""
    plane.check_serving()  # a plane that lost the hold refuses the whole batch, not each part
    halts = Halts()
    outcomes: list[Any] = []
    # Part by part (as `run_many_async` would): a failed commit of one part fails its messages
    # after their work ran, so their tasks are halted before the next part begins.
    for part in parts(runnable(operations, halts)):
        tasks = [None if task is None else task[0] for task, _, _ in part]
        done = await plane.run_many_async([(call, work) for _, call, work in part], tasks)
        for (task, _, _), outcome in zip(part, done, strict=True):
            if task is not None and isinstance(outcome, BaseException) and not for_good(outcome):
                halts.fail(*task)
        outcomes.extend(done)
    return answers_of(operations, outcomes)


Runnable = tuple[tuple[int, int] | None, str, Callable[[Connection], Any]]
"""An operation that reaches the store: (its task and index, or None), its call and work."""


def runnable(operations: Sequence[Operation], halts: Halts) -> list[Runnable]:
    """The operations that reach the store (the others were refused by their body checks),
    each message's work kept behind the earlier messages of its task (`in_turn`)."""
    ready: list[Runnable] = []
    for index, op in enumerate(operations):
        if op.refused is not None or op.work is None:
            continue
        if op.task is None:
            ready.append((None, op.call, op.work))
        else:
            ready.append(((op.task, index), op.call, in_turn(op.work, op.task, index, halts)))
    return ready


def answers_of(operations: Sequence[Operation], outcomes: Sequence[Any]) -> list[dict[str, Any]]:
    """Each operation's answer, in order, from `outcomes` (a reply or an exception each) of the
    operations that ran."""
    ran = iter(outcomes)
    answers = []
    for operation in operations:
        outcome = operation.refused if operation.refused is not None else next(ran)
        if isinstance(outcome, Refusal):
            status, body = outcome.status, envelope(outcome)
        elif isinstance(outcome, BaseException):
            raise outcome  # not a refusal: a fault, answered as any route's (`500`)
        else:
            status, body = outcome
        answers.append({"status": status, "body": body})
    return answers


def prepared(
    call: str, build: Callable[[], Callable[[Connection], Reply]], task: int | None = None
) -> Operation:
    """An operation whose body checks run now: a refusal becomes that operation's answer."""
    try:
        return Operation(call, build(), task=task)
    except Refusal as exc:
        return Operation(call, refused=exc, task=task)


# --- POST /tasks/claim with max ------------------------------------------------------------------


async def claim_several(
    plane: Plane,
    receive: Receive,
    supervisor: str,
    states: list[str],
    request_id: str | None,
    wait: float,
    most: int,
    structure: str,
) -> Reply:
    """`POST /tasks/claim` with `max`: `{"grants": [...]}`, or `204`; tasks of
    `structure` only."""
    if not states and request_id is None:
        plane.check_serving()
        return 204, None

    def work(conn: Connection) -> list[Any] | None:
        grants = claim_many(
            conn, plane.clock, plane.config, supervisor, states, request_id, most, structure
        )
        return grants or None

    async def attempt() -> list[Any] | None:
        return await plane.run_async("claim", work)

    if not states:
        wait = 0.0  # no task can be queued for no state: nothing to wait for
    started = tracing.now()
    gone = partial(longpoll.until_disconnect, receive)
    granted = await longpoll.claim_waiting(plane.wakeups, wait, attempt, gone, states, work)
    if granted is not None and tracing.on():
        await tracing.claimed(plane, started, granted)  # each grant's `traceparent`
    return (204, None) if granted is None else (200, {"grants": granted})


# --- POST /tasks/messages ------------------------------------------------------------------------


def message_operation(plane: Plane, actor: str | None, message: bodies.Message) -> Operation:
    """One message as the operation of its single route (report, note or memory write)."""
    clock, config = plane.clock, plane.config

    def report_work() -> Callable[[Connection], Reply]:
        outcome = replace(bodies.report_args(message.body), by=bodies.by_arg(message.body, actor))
        task_id = known_id(message.task)
        return lambda conn: (200, token_wire(report(conn, clock, config, task_id, outcome)))

    def note_work() -> Callable[[Connection], Reply]:
        text, attempt = bodies.note_args(message.body)
        task_id = known_id(message.task)

        def work(conn: Connection) -> Reply:
            note(conn, clock, config, task_id, text, attempt)
            return 204, None

        return work

    def memory_work() -> Callable[[Connection], Reply]:
        key, value, attempt = bodies.memory_args(message.body)
        task_id = known_id(message.task)

        def work(conn: Connection) -> Reply:
            write_memory(conn, clock, config, task_id, key, value, attempt)
            return 204, None

        return work

    builders = {"report": report_work, "note": note_work, "memory": memory_work}
    return prepared(message.type, builders[message.type], message.task)


async def messages_reply(plane: Plane, actor: str | None, body: dict[str, Any]) -> Reply:
    """Several reports, notes and memory writes, applied in order."""
    _supervisor, messages = bodies.messages_args(body)
    operations = [message_operation(plane, actor, message) for message in messages]
    started = tracing.now()
    answers = await run_in_order(plane, operations)
    # `stateous_reports` counts accepted reports, whichever route carried them.
    for message, answered in zip(messages, answers, strict=True):
        if message.type == "report" and answered["status"] == 200:
            plane.metrics.reports.inc()
            if tracing.on():
                body = message.body
                await tracing.reported(plane, started, message.task, body, answered["body"])
    return 200, {"answers": answers}


@post("/tasks/messages", status_code=200)
async def send_messages(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Several reports, notes and memory writes, applied in order."""
    body = await read_body(request)
    return reply(await messages_reply(plane_of(request), actor_of(request), body))


# --- POST /tokens/batch --------------------------------------------------------------------------


def start_operation(
    plane: Plane, actor: str | None, item: dict[str, Any], trace: str | None = None
) -> Operation:
    """One start as the operation of `POST /tokens`: `201` new, `200` existing; a new token
    keeps `trace` (a W3C `traceparent`) when given."""
    clock, config = plane.clock, plane.config

    def build() -> Callable[[Connection], Reply]:
        token_id, context, by = item.get("token"), item.get("context"), bodies.by_arg(item, actor)

        def work(conn: Connection) -> Reply:
            started = start(conn, clock, config, token_id, context, by)
            keep_traces(conn, [StartArgs(token_id, context, by, trace)], [started])
            return (201 if started.created else 200), token_wire(started.token)

        return work

    return prepared("start", build)


@get("/tokens/batch", include_in_schema=False)
async def token_named_batch(request: Request[Any, Any, Any]) -> Response[bytes]:
    """`GET /tokens/{id}` of a token named `batch`, which the fixed path above would shadow."""
    return answer(await run(request, "token", lambda conn: reads.read_token(conn, "batch")))


@post("/tokens/batch", status_code=200)
async def start_tokens(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Start up to 1000 tokens, each as `POST /tokens` would."""
    body = await read_body(request)
    items = bodies.starts_args(body)
    if "by" in body:  # one `by` for each start that names none
        by_of(request, body)  # a malformed one refuses the whole batch, before any start
        items = [item if "by" in item else {**item, "by": body["by"]} for item in items]
    plane, actor = plane_of(request), actor_of(request)
    traces = tracing.begin_starts(len(items))  # a trace each, when serve traces
    if starts_in_bulk(plane.config.body(None)):
        answers = await starts_in_parts(plane, actor, items, traces)
    else:
        operations = [
            start_operation(plane, actor, item, tracing.traceparent_of(trace))
            for item, trace in zip(items, traces, strict=True)
        ]
        answers = await run_in_order(plane, operations)
    tracing.end_starts(traces, answers)
    return answer({"answers": answers})


#: The starts one operation of `start_many` applies: a few milliseconds of a shared transaction.
STARTS_MOST = 100


async def starts_in_parts(
    plane: Plane,
    actor: str | None,
    items: Sequence[dict[str, Any]],
    traces: Sequence[tracing.Starting | None] | None = None,
) -> list[dict[str, Any]]:
    """The starts in parts of `STARTS_MOST`, each one operation of `start_many` queued after
    the one before committed; the answers in order. `traces`: each start's."""
    answers: list[dict[str, Any]] = []
    for first in range(0, len(items), STARTS_MOST):
        part = slice(first, first + STARTS_MOST)
        answers.extend(await start_part(plane, actor, items[part], (traces or [])[part]))
    return answers


async def start_part(
    plane: Plane,
    actor: str | None,
    items: Sequence[dict[str, Any]],
    traces: Sequence[tracing.Starting | None] = (),
) -> list[dict[str, Any]]:
    """One part's starts as one operation; when a new row raced another call's (`Raced`), the
    part is started again one operation per start, as `POST /tokens` would. A new token keeps
    its start's trace (`traces`, in the order of `items`; none: no trace)."""
    parents = [tracing.traceparent_of(trace) for trace in traces] or [None] * len(items)
    args: list[StartArgs | Refusal] = []
    for item, parent in zip(items, parents, strict=True):
        try:
            by = bodies.by_arg(item, actor)
            args.append(StartArgs(item.get("token"), item.get("context"), by, parent))
        except Refusal as exc:
            args.append(exc)
    ready = [a for a in args if isinstance(a, StartArgs)]
    clock, config = plane.clock, plane.config

    def work(conn: Connection) -> list[Started | Refusal]:
        outcomes = start_many(conn, clock, config, ready)
        keep_traces(conn, ready, outcomes)
        return outcomes

    [outcome] = await plane.run_many_async([("start", work)])
    if isinstance(outcome, Raced):
        operations = [
            start_operation(plane, actor, item, parent)
            for item, parent in zip(items, parents, strict=True)
        ]
        return await run_in_order(plane, operations)
    if isinstance(outcome, Refusal):  # the shared transaction failed: none of them applied
        outcome = [outcome] * len(ready)
    elif isinstance(outcome, BaseException):
        raise outcome  # a fault, answered as any route's (`500`)
    ran = iter(outcome)
    return [start_answer(a if isinstance(a, Refusal) else next(ran)) for a in args]


def start_answer(outcome: Started | Refusal) -> dict[str, Any]:
    """A start's answer in a batch: `201` new, `200` existing, or its refusal."""
    if isinstance(outcome, Refusal):
        return {"status": outcome.status, "body": envelope(outcome)}
    return {"status": 201 if outcome.created else 200, "body": token_wire(outcome.token)}


ROUTES = [send_messages, start_tokens, token_named_batch]
