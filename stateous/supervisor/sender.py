"""The sender: delivers the outbox's notes, memory writes and reports (spec 40 §4.6-4.7, §5.3)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from stateous.supervisor.grant import Grant
from stateous.supervisor.outbox import Message, OutboxError
from stateous.supervisor.outcome import failed
from stateous.supervisor.remote import Answer
from stateous.supervisor.shared import Shared

__all__ = ["Sender"]

log = logging.getLogger("stateous.supervisor")

_REFUSED_REPORT = "the control plane refused the report: "


class Sender:
    """Delivers each message as §4.7 says, in the order of its grant."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    async def serve(self, grant: Grant) -> None:
        """Deliver the grant's queued notes and memory writes one at a time, until cancelled."""
        while True:
            message = await grant.queue.get()
            try:
                if not grant.stuck and not grant.lost and not await self.deliver(message):
                    grant.stuck = True
            finally:
                grant.queue.task_done()

    async def report(self, grant: Grant, outcome: dict[str, Any]) -> None:
        """Write the grant's report to the outbox, then deliver it."""
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
        if grant.stuck:
            self._stays(message)
            return
        await self.deliver(message)

    async def send_leftovers(self) -> None:
        """Send what the outbox holds from an earlier run, in id order (spec 40 §5.3)."""
        messages = self.shared.outbox.pending()
        if not messages:
            return
        log.info("sending %s message(s) left in the outbox", len(messages))
        stuck: set[int] = set()
        for message in messages:
            if message.task in stuck:
                continue
            if not await self.deliver(message):
                stuck.add(message.task)
                if self.shared.stopping:
                    return

    async def deliver(self, message: Message) -> bool:
        """Send one message as §4.7 says; False when it stays in the outbox (a stop began)."""
        try:
            if message.kind == "report":
                return await self._deliver_report(message)
            return await self._deliver_side(message)
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

    async def _deliver_side(self, message: Message) -> bool:
        shared = self.shared
        body = {**message.body, "attempt": message.attempt}
        if message.kind == "note":
            path, method = f"/tasks/{message.task}/note", "POST"
        else:
            path, method = f"/tasks/{message.task}/memory", "PUT"
        answer = await shared.persist(lambda: shared.remote.call(method, path, body))
        if answer is None:
            return self._stays(message)
        if not answer.ok:
            log.warning(
                "task %s: the control plane refused a %s: %s",
                message.task,
                message.kind,
                answer.sentence,
            )
        await asyncio.to_thread(shared.outbox.remove, message.id)
        return True

    async def _deliver_report(self, message: Message) -> bool:
        shared = self.shared
        body = {**message.body, "attempt": message.attempt, "supervisor": shared.settings.name}
        path = f"/tasks/{message.task}/report"
        answer = await shared.persist(lambda: shared.remote.call("POST", path, body))
        if answer is None:
            return self._stays(message)
        if answer.ok:
            # Off the event loop: the outbox's commit waits for the disk (claims go on meanwhile).
            await asyncio.to_thread(shared.outbox.remove, message.id)
            outcome = message.body.get("kind")
            shown = message.body.get("event") if outcome == "event" else outcome
            log.info("task %s of %s: reported %s", message.task, message.token, shown)
            return True
        if message.body.get("kind") == "failed":
            error = str(message.body.get("error", ""))
            what = "the failure report too" if error.startswith(_REFUSED_REPORT) else "the report"
            self._refused(message, answer, what)
            shared.outbox.remove(message.id)
            return True
        self._refused(message, answer, "the report")
        if answer.status == 404 or answer.code == "attempt_over":
            shared.outbox.remove(message.id)
            return True
        if answer.status == 409:
            held = await self._still_held(message)
            if held is not True:
                shared.outbox.remove(message.id)
                return True
        replacement = shared.outbox.add(
            message.task,
            message.attempt,
            message.token,
            "report",
            failed(_REFUSED_REPORT + answer.sentence, message.attempt),
        )
        shared.outbox.remove(message.id)
        return await self._deliver_report(replacement)

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
