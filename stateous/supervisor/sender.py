"""The sender: delivers the outbox's notes, memory writes and reports.

One sender serves every grant. When more than one message is ready it sends all of them, of
every grant, in one `POST /tasks/messages`, each grant's in the order they were written (notes
and memory writes before the report); one message alone goes to its single route. Each message
leaves the outbox on its own answer. A batch that gets no answer is sent again whole: every
message is safe to repeat (a repeated report is refused, and a refused report is handled as below).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from stateous.supervisor.grant import Grant
from stateous.supervisor.outbox import Message, OutboxError
from stateous.supervisor.outcome import failed
from stateous.supervisor.remote import Answer, UnreadableAnswer
from stateous.supervisor.shared import Shared

__all__ = ["MAX_MESSAGES", "Sender"]

log = logging.getLogger("stateous.supervisor")

MAX_MESSAGES = 100  # the most messages one `POST /tasks/messages` takes

_REFUSED_REPORT = "the control plane refused the report: "
_NO_ANSWER = (502, 503, 504)  # an answer of a batch that is no answer for its message
_NO_ROUTE = (404, 405)  # a control plane without `POST /tasks/messages`


class _Singly(Exception):  # an outcome of a batch, not a failure
    """The messages of a batch are sent one by one instead."""


class Sender:
    """Delivers each message, in the order of its grant.

    A message leaves the outbox when the control plane accepts or refuses it; no answer
    (a transport error, a timeout, 502/503/504) is retried, and the grant's later messages
    wait behind it. A refused note or memory write is logged and removed.
    """

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.batching = True  # until the control plane shows it has no `POST /tasks/messages`
        self._removing: set[asyncio.Task[None]] = set()  # answered messages leaving the outbox
        self._last_removal: asyncio.Task[None] | None = None

    # --- the grants' messages ---------------------------------------------------------------

    async def run(self) -> None:
        """Send the grants' ready messages, round after round, until cancelled."""
        shared = self.shared
        while True:
            await shared.ready.wait()
            shared.ready.clear()
            while batch := self._ready_messages():
                try:
                    stuck = await self.send([message for _, message in batch])
                except Exception:  # a fault of ours must not end the sending of every grant
                    log.exception("could not send %s message(s)", len(batch))
                    stuck = set()
                self._settle(batch, stuck)

    async def report(self, grant: Grant, outcome: dict[str, Any]) -> None:
        """Write the grant's report to the outbox and queue it behind the grant's messages."""
        shared = self.shared
        try:
            message = await asyncio.to_thread(
                shared.outbox.add, grant.task, grant.attempt, grant.token, "report", outcome
            )
        except OutboxError as exc:
            log.error(
                "task %s of %s: cannot write the report to the outbox: %s",
                grant.task,
                grant.token,
                exc,
            )
            return
        shared.enqueue(grant, message)

    def _ready_messages(self) -> list[tuple[Grant, Message]]:
        """Up to MAX_MESSAGES waiting messages with their grants, each grant's in order."""
        batch: list[tuple[Grant, Message]] = []
        for grant in list(self.shared.grants.values()):
            if grant.stuck:
                self._drop(grant)
            while grant.pending and len(batch) < MAX_MESSAGES:
                grant.sending += 1
                batch.append((grant, grant.pending.popleft()))
            if not grant.pending and not grant.sending:
                grant.drained.set()
        return batch

    def _settle(self, batch: list[tuple[Grant, Message]], stuck: set[int]) -> None:
        """After a round: a grant whose message stayed is stuck, and a grant with nothing left
        to send is drained."""
        for grant, message in batch:
            grant.sending -= 1
            if message.task in stuck:
                grant.stuck = True
        for grant, _ in batch:
            if grant.stuck:
                self._drop(grant)
            if not grant.pending and not grant.sending:
                grant.drained.set()

    def _drop(self, grant: Grant) -> None:
        """The waiting messages of a stuck grant stay in the outbox, behind the one that could
        not be sent (a stop began); its report says so."""
        while grant.pending:
            message = grant.pending.popleft()
            if message.kind == "report":
                self._stays(message)

    # --- at start ------------------------------------------------------------

    async def send_leftovers(self) -> None:
        """Send what the outbox holds from an earlier run, in id order."""
        messages = self.shared.outbox.pending()
        if not messages:
            return
        log.info("sending %s message(s) left in the outbox", len(messages))
        stuck: set[int] = set()
        while messages:
            messages = [m for m in messages if m.task not in stuck]
            batch, messages = messages[:MAX_MESSAGES], messages[MAX_MESSAGES:]
            if not batch:
                return
            stuck |= await self.send(batch)
            if stuck and self.shared.stopping:
                return

    # --- one round ----------------------------------------------------------------------------

    async def send(self, messages: list[Message]) -> set[int]:
        """Deliver `messages` (in order, at most MAX_MESSAGES); answers the tasks whose
        messages stay in the outbox (possible only once a stop has begun)."""
        if len(messages) > 1 and self.batching:
            try:
                answers = await self._post(messages)
            except _Singly:
                return await self._singly(messages)
            if answers is None:
                return self._all_stay(messages)
            return await self._answered_batch(messages, answers)
        return await self._singly(messages)

    async def _singly(self, messages: list[Message]) -> set[int]:
        stuck: set[int] = set()
        for message in messages:
            if message.task not in stuck and not await self.deliver(message):
                stuck.add(message.task)
        return stuck

    def _all_stay(self, messages: list[Message]) -> set[int]:
        stuck: set[int] = set()
        for message in messages:
            if message.task not in stuck:
                self._stays(message)
                stuck.add(message.task)
        return stuck

    async def _post(self, messages: list[Message]) -> list[Answer] | None:
        """The answers of one `POST /tasks/messages`, retried whole until it gets an answer;
        None when a stop began without one; _Singly when the messages must go one by one."""
        shared = self.shared
        body = {
            "supervisor": shared.settings.name,
            "messages": [{"type": m.kind, "task": m.task, "body": self._body(m)} for m in messages],
        }
        try:
            answer = await shared.persist(
                lambda: shared.remote.call("POST", "/tasks/messages", body)
            )
        except UnreadableAnswer as exc:
            log.warning("the control plane refused %s messages at once: %s", len(messages), exc)
            raise _Singly from None
        if answer is None:
            return None
        if answer.status in _NO_ROUTE:
            self.batching = False
            log.info("the control plane has no POST /tasks/messages: sending each message alone")
            raise _Singly
        answers = _answers(answer, len(messages))
        if answers is None:
            why = answer.sentence if not answer.ok else "the answer is not one per message"
            log.warning("the control plane refused %s messages at once: %s", len(messages), why)
            raise _Singly
        return answers

    async def _answered_batch(self, messages: list[Message], answers: list[Answer]) -> set[int]:
        """Act on each message's own answer; removals of a batch share one commit."""
        plain: list[tuple[Message, Answer]] = []
        later: list[tuple[Message, Answer]] = []  # sent again alone, or a refused report
        for pair in zip(messages, answers, strict=True):
            message, answer = pair
            again = answer.status in _NO_ANSWER or _is_refused_report(message, answer)
            (later if again else plain).append(pair)
        logs = [self._plain(m, a) for m, a in plain]
        self._leave([m.id for m, _ in plain], logs)
        stuck: set[int] = set()
        for message, answer in later:
            if message.task in stuck:
                continue
            if answer.status in _NO_ANSWER:
                delivered = await self.deliver(message)
            else:
                delivered = await self._guarded(message, self._refused_report(message, answer))
            if not delivered:
                stuck.add(message.task)
        return stuck

    def _plain(self, message: Message, answer: Answer) -> str:
        """An accepted message, or a refused note or memory write, which leaves the outbox;
        answers the line to log once it has left (a report's `reported <x>`), or ""."""
        if answer.ok:
            if message.kind != "report":
                return ""
            outcome = message.body.get("kind")
            self.shared.tally.count(failed=outcome == "failed")
            shown = message.body.get("event") if outcome == "event" else outcome
            return f"task {message.task} of {message.token}: reported {shown}"
        log.warning(
            "task %s: the control plane refused a %s: %s",
            message.task,
            message.kind,
            answer.sentence,
        )
        return ""

    # --- one message -----------------------------------------------------------

    async def deliver(self, message: Message) -> bool:
        """Send one message; False when it stays in the outbox (a stop began)."""
        return await self._guarded(message, self._deliver_one(message))

    async def _guarded(self, message: Message, work: Any) -> bool:
        try:
            delivered: bool = await work
            return delivered
        except Exception:
            if message.kind == "report":
                log.exception("task %s of %s: could not report", message.task, message.token)
            else:
                log.exception("task %s: could not send a %s", message.task, message.kind)
            self.shared.outbox.remove(message.id)
            return True

    def _stays(self, message: Message) -> bool:
        log.warning(
            "task %s of %s: the control plane cannot be reached; the %s stays in the outbox "
            "for the next start",
            message.task,
            message.token,
            message.kind,
        )
        return False

    def _body(self, message: Message) -> dict[str, Any]:
        """The message's body on its single route."""
        body = {**message.body, "attempt": message.attempt}
        if message.kind == "report":
            body["supervisor"] = self.shared.settings.name
        return body

    async def _deliver_one(self, message: Message) -> bool:
        shared = self.shared
        if message.kind == "report":
            path, method = f"/tasks/{message.task}/report", "POST"
        elif message.kind == "note":
            path, method = f"/tasks/{message.task}/note", "POST"
        else:
            path, method = f"/tasks/{message.task}/memory", "PUT"
        body = self._body(message)
        answer = await shared.persist(lambda: shared.remote.call(method, path, body))
        if answer is None:
            return self._stays(message)
        if _is_refused_report(message, answer):
            return await self._refused_report(message, answer)
        self._leave([message.id], [self._plain(message, answer)])
        return True

    def _leave(self, ids: list[int], lines: list[str]) -> None:
        """Remove answered messages from the outbox, then log their lines, without holding up
        the sender or the grants: a message answered for good is delivered, and a crash before
        its removal only sends it again, which the control plane refuses as a repeat (a refused
        report is handled by `_refused_report`). The supervisor waits for the removal before it
        exits."""
        if ids:
            # Each removal after the one before: the lines keep the order of the answers.
            task = self.shared.spawn(self._remove(ids, lines, self._last_removal))
            self._removing.add(task)
            task.add_done_callback(self._removing.discard)
            self._last_removal = task

    async def removed(self) -> None:
        """Wait until the messages answered so far have left the outbox (and their lines are
        logged)."""
        while self._removing:
            await asyncio.gather(*self._removing)

    async def _remove(
        self, ids: list[int], lines: list[str], after: asyncio.Task[None] | None
    ) -> None:
        if after is not None and not after.done():
            await asyncio.wait({after})
        try:
            # Off the event loop: the outbox's commit waits for the disk.
            await asyncio.to_thread(self.shared.outbox.remove_many, ids)
        except Exception:
            log.exception("could not remove %s answered message(s) from the outbox", len(ids))
            return
        for line in lines:
            if line:
                log.debug("%s", line)  # per task: the tally's line a minute says it at INFO

    async def _refused_report(self, message: Message, answer: Answer) -> bool:
        """A refused report: logged, then removed (a `failed` one, a 404 or `attempt_over`), or
        after another 409 checked with a heartbeat, and a report of a task still held is
        replaced by a `failed` report that gives the refusal as the error."""
        outbox = self.shared.outbox
        if message.body.get("kind") == "failed":
            error = str(message.body.get("error", ""))
            what = "the failure report too" if error.startswith(_REFUSED_REPORT) else "the report"
            self._refused(message, answer, what)
            outbox.remove(message.id)
            return True
        self._refused(message, answer, "the report")
        if answer.status == 404 or answer.code == "attempt_over":
            outbox.remove(message.id)
            return True
        if answer.status == 409:
            held = await self._still_held(message)
            if held is not True:
                outbox.remove(message.id)
                return True
        replacement = outbox.add(
            message.task,
            message.attempt,
            message.token,
            "report",
            failed(_REFUSED_REPORT + answer.sentence, message.attempt),
        )
        outbox.remove(message.id)
        return await self._deliver_one(replacement)

    def _refused(self, message: Message, answer: Answer, what: str) -> None:
        log.warning(
            "task %s of %s: the control plane refused %s: %s",
            message.task,
            message.token,
            what,
            answer.sentence,
        )

    async def _still_held(self, message: Message) -> bool | None:
        """Whether this supervisor still holds the task: a heartbeat naming only it."""
        shared = self.shared
        try:
            body = {"supervisor": shared.settings.name, "tasks": [message.task]}
            answer = await shared.persist(
                lambda: shared.remote.call("POST", "/tasks/heartbeat", body)
            )
            if answer is None or not answer.ok or not isinstance(answer.body, dict):
                raise ValueError(f"the heartbeat got {answer!r}")
            return message.task not in answer.body.get("lost", [])
        except Exception:
            log.exception("task %s of %s: could not check the task", message.task, message.token)
            return None


def _is_refused_report(message: Message, answer: Answer) -> bool:
    """A report the control plane refused: `_refused_report` decides what follows."""
    return message.kind == "report" and not answer.ok


def _answers(answer: Answer, count: int) -> list[Answer] | None:
    """The per-message answers of a batch's answer; None when it is not one per message."""
    if not answer.ok or not isinstance(answer.body, dict):
        return None
    items = answer.body.get("answers")
    if not isinstance(items, list) or len(items) != count:
        return None
    answers = []
    for item in items:
        status = item.get("status") if isinstance(item, dict) else None
        if not isinstance(status, int) or isinstance(status, bool):
            return None
        answers.append(Answer(status, item.get("body")))
    return answers
