"""`stateous supervise`: start-up, the claim loop, heartbeats, reports and stopping (spec 40 §4).

One asyncio loop runs the heartbeat loop, the claim loop, one task per grant (an `async def`
routine directly, a `def` routine in a daemon thread of its own) and one sender per grant that
delivers the grant's notes and memory writes in order, before its report.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from stateous.model.errors import StateousError
from stateous.supervisor.folder import Registry, Settings, load_routines
from stateous.supervisor.outbox import Message, MessageKind, Outbox, OutboxError
from stateous.supervisor.outcome import error_text, failed, outcome_of
from stateous.supervisor.remote import Answer, NoAnswer, Remote, UnreadableAnswer
from stateous.supervisor.routine import Context

__all__ = ["StartError", "Supervisor", "Timings"]

log = logging.getLogger("stateous.supervisor")

_DELAYS = (1, 2, 4, 8, 16, 30)
_REFUSED_REPORT = "the control plane refused the report: "
# The refusals of a control plane that does not know the `wait` field of a claim (spec 70 §2).
_WAIT_REFUSALS = frozenset({"invalid_body", "invalid_argument", "unknown_field"})
_EMBEDDED_WAIT = 1.0


class StartError(StateousError):
    """The supervisor does not start; the message is the sentence after `error: `."""

    code = "supervisor_start"


@dataclass(frozen=True)
class Timings:
    """The supervisor's timings: the spec's defaults, which tests may shorten by environment."""

    heartbeat: float = 30.0  # STATEOUS_SUPERVISOR_HEARTBEAT
    idle: float = 1.0  # STATEOUS_SUPERVISOR_IDLE: the wait after a claim that got no task
    max_retry: float = 30.0  # STATEOUS_SUPERVISOR_MAX_RETRY: the longest wait between tries
    wait: float = 10.0  # STATEOUS_SUPERVISOR_WAIT: a claim's long-poll wait (spec 70 §2); 0: none

    @classmethod
    def from_env(cls) -> Timings:
        """The defaults, overridden by the environment variables named above."""

        def read(name: str, default: float) -> float:
            try:
                return float(os.environ.get(name, default))
            except ValueError:
                return default

        return cls(
            heartbeat=read("STATEOUS_SUPERVISOR_HEARTBEAT", cls.heartbeat),
            idle=read("STATEOUS_SUPERVISOR_IDLE", cls.idle),
            max_retry=read("STATEOUS_SUPERVISOR_MAX_RETRY", cls.max_retry),
            wait=read("STATEOUS_SUPERVISOR_WAIT", cls.wait),
        )


@dataclass(eq=False)
class Grant:
    """One claimed task attempt, while its routine runs and its messages are delivered."""

    task: int
    token: str
    state: str
    visit: int
    attempt: int
    context: dict[str, Any]
    memory: dict[str, Any]
    entered_by: str
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    lost: bool = False
    reporting: bool = False
    running: bool = False
    stuck: bool = False  # a message could not be delivered during a stop: the rest stay too
    thread: threading.Thread | None = None
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    queue: asyncio.Queue[Message] = field(default_factory=asyncio.Queue)


def _grant(body: object) -> Grant:
    """A grant from a claim's answer; ValueError says why it is not valid."""
    if not isinstance(body, dict):
        raise ValueError("the answer is not a JSON object")

    def need(key: str, kind: type | tuple[type, ...]) -> Any:
        value = body.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"'{key}' is missing or has the wrong type")
        return value

    entered = body.get("entered_by")
    name = entered.get("name") if isinstance(entered, dict) else None
    if not isinstance(name, str):
        raise ValueError("'entered_by' has no name")
    return Grant(
        task=need("task", int),
        token=need("token", str),
        state=need("state", str),
        visit=need("visit", int),
        attempt=need("attempt", int),
        context=need("context", dict),
        memory=need("memory", dict),
        entered_by=name,
    )


class _Sink:
    """Where the routine of one grant writes its notes and memory: the outbox, then a sender."""

    def __init__(self, supervisor: Supervisor, grant: Grant) -> None:
        self._supervisor = supervisor
        self._grant = grant

    def note(self, text: str) -> None:
        self._put("note", {"text": text})

    def memory(self, key: str, value: Any) -> None:
        self._put("memory", {"key": key, "value": value})

    def _put(self, kind: MessageKind, body: dict[str, Any]) -> None:
        grant, supervisor = self._grant, self._supervisor
        if grant.lost or supervisor.forced:
            return  # the attempt is over: the control plane would refuse the message
        try:
            message = supervisor.outbox.add(grant.task, grant.attempt, grant.token, kind, body)
        except OutboxError as exc:
            log.error(
                "task %s of %s: cannot write the %s to the outbox: %s",
                grant.task,
                grant.token,
                kind,
                exc,
            )
            raise OutboxError(f"cannot write the {kind} to the outbox: {exc}") from None
        supervisor.enqueue(grant, message)


class Supervisor:
    """One supervisor: its folder's settings, outbox, routines and the control plane."""

    def __init__(
        self,
        settings: Settings,
        outbox: Outbox,
        *,
        url: str | None = None,
        timings: Timings | None = None,
        remote: Remote | None = None,
    ) -> None:
        self.settings = settings
        self.outbox = outbox
        self.url = url or settings.url
        self.timings = timings or Timings.from_env()
        self.remote = remote or Remote(self.url, auth_token=settings.auth_token)
        # Long-poll claims until the control plane refuses the field (spec 70 §2).
        self.long_poll = self.timings.wait > 0
        self.registry = Registry({})
        self.grants: dict[int, Grant] = {}
        self.stopping = False
        self.forced = False
        self.started_at = datetime.now(UTC).isoformat()
        self.last_heartbeat: str | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0

    # --- start-up (spec 40 §4.2 steps 3 to 7) -------------------------------------------------

    async def start(self) -> None:
        """Check health and checksum, import the routines, and log what this supervisor serves."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        try:
            answer = await self._persist(lambda: self.remote.call("GET", "/health"))
        except UnreadableAnswer as exc:
            answer = Answer(exc.status, None)
        if answer is None:
            raise StartError(f"{self.url} did not answer as a Stateous control plane: stopped")
        served = self._served_checksum(answer)
        folder = self.settings.folder.resolve()
        if served != self.settings.checksum:
            raise StartError(
                f"{folder}/contract.py is for another version of the workflow "
                f"({self.settings.checksum}; the control plane serves {served}): "
                f"run `stateous init supervisor {self.url} {folder}` again"
            )
        self.registry = load_routines(self.settings.folder)
        log.info(
            "%s serves %s; the control plane is %s",
            self.settings.name,
            ", ".join(self.registry.states),
            self.url,
        )

    def _served_checksum(self, answer: Answer) -> str:
        def refuse(message: str) -> StartError:
            return StartError(f"{self.url} did not answer as a Stateous control plane: {message}")

        if not answer.ok:
            detail = f", {answer.code}: {answer.sentence}" if answer.code else ""
            raise refuse(f"it answered {answer.status}{detail}")
        if not isinstance(answer.body, dict):
            raise refuse("the control plane's answer is not a JSON object")
        checksum = answer.body.get("checksum")
        if not isinstance(checksum, str):
            raise refuse("the control plane's answer has no checksum")
        return checksum

    # --- running ------------------------------------------------------------------------------

    def install_signals(self) -> None:
        """SIGINT and SIGTERM stop the supervisor: gracefully, then at once (spec 40 §4.9)."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self.signal)

    def signal(self) -> None:
        """One stop signal: the first stops claiming, the second cancels the routines."""
        # A routine the control plane took back is being cancelled, not waited for.
        running = sum(1 for g in self.grants.values() if g.running and not g.lost)
        if not self.stopping:
            self.stopping = True
            log.warning(
                "stopping: no new tasks; waiting for %s routine(s) (signal again to stop now)",
                running,
            )
            self._stop.set()
            self._wake.set()
        elif not self.forced:
            self.forced = True
            log.warning("stopping now: cancelling %s routine(s)", running)
            for grant in self.grants.values():
                grant.abort.set()

    async def run(self) -> int:
        """Claim and run tasks until a stop; answers the exit code (0 graceful, 1 forced)."""
        heartbeat = asyncio.create_task(self._heartbeat_loop())
        status = asyncio.create_task(self._status_loop())
        self._write_status()
        try:
            claims = asyncio.create_task(self._claim_loop())
            await claims
            while self._tasks and not self.forced:
                await asyncio.wait(set(self._tasks), return_when=asyncio.FIRST_COMPLETED)
                if self.forced:
                    break
            if self.forced:
                await self._forced_exit()
                return 1
            return 0
        finally:
            heartbeat.cancel()
            status.cancel()
            self._write_status()
            await self.remote.aclose()

    async def _forced_exit(self) -> None:
        pending = {t for t in self._tasks if not t.done()}
        if pending:
            _, pending = await asyncio.wait(pending, timeout=5.0)
            if pending:
                log.warning("%s routine(s) did not stop; exiting without them", len(pending))
        threads = [g.thread for g in self.grants.values() if g.thread is not None]
        for thread in threads:
            await asyncio.to_thread(thread.join, 2.0)
            if thread.is_alive():
                log.warning("a thread of a routine did not stop; exiting without it")
                break

    def enqueue(self, grant: Grant, message: Message) -> None:
        """Hand a committed message to the grant's sender, from any thread."""
        if threading.get_ident() == self._loop_thread:
            grant.queue.put_nowait(message)
        elif self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(grant.queue.put_nowait, message)

    # --- retries (spec 40 §4.8) ---------------------------------------------------------------

    async def _persist(self, call: Callable[[], Awaitable[Answer]]) -> Answer | None:
        """Call until an answer comes; None when a stop has begun and the call got none."""
        tries = 0
        while True:
            try:
                return await call()
            except NoAnswer as exc:
                if self.stopping:
                    return None
                delay = min(_DELAYS[min(tries, len(_DELAYS) - 1)], self.timings.max_retry)
                tries += 1
                shown = f"{delay:g}"
                log.warning("%s; trying again in %ss", exc.text, shown)
                if await self._wait(self._stop, delay):
                    return None

    @staticmethod
    async def _wait(event: asyncio.Event, seconds: float) -> bool:
        """Wait up to `seconds` for `event`; answers whether it is set."""
        try:
            await asyncio.wait_for(event.wait(), timeout=seconds)
        except TimeoutError:
            return event.is_set()
        return True

    # --- the claim loop (spec 40 §4.3) --------------------------------------------------------

    async def _claim_loop(self) -> None:
        await self._send_leftovers()
        request = uuid.uuid4().hex
        while not self.stopping:
            if len(self.grants) >= self.settings.tasks:
                self._wake.clear()
                await self._wait(self._wake, 3600)
                continue
            body: dict[str, Any] = {
                "supervisor": self.settings.name,
                "states": self.registry.states,
                "request": request,
            }
            waited = self.long_poll
            if waited:
                body["wait"] = self.timings.wait
            sent = time.monotonic()
            try:
                answer = await self._persist(
                    partial(self.remote.call, "POST", "/tasks/claim", body)
                )
            except Exception:
                log.exception("a claim failed")
                await self._idle()
                continue
            if answer is None:
                return
            request = uuid.uuid4().hex
            if answer.status == 204:
                # A held claim that ran its wait out: claim again at once. An early `204` (a
                # control plane that ignores `wait`, or one shutting down): wait as without it.
                if not waited or time.monotonic() - sent < self.timings.wait * 0.9:
                    await self._idle()
            elif not answer.ok:
                log.warning("the control plane refused a claim: %s", answer.sentence)
                if waited and answer.code in _WAIT_REFUSALS:
                    self.long_poll = False  # an older control plane: claim each second
                await self._idle()
            else:
                self._take(answer.body)

    async def _idle(self) -> None:
        """Wait a second, or less when a routine ends or a stop arrives."""
        self._wake.clear()
        await self._wait(self._wake, self.timings.idle)

    def _take(self, body: object) -> None:
        try:
            grant = _grant(body)
        except ValueError as exc:
            log.warning("the control plane refused a claim: the claimed task is not valid: %s", exc)
            return
        log.info(
            "task %s: %s of %s, attempt %s", grant.task, grant.state, grant.token, grant.attempt
        )
        if self.forced:
            log.warning(
                "task %s of %s: stopping now, so its routine does not run", grant.task, grant.token
            )
            return
        old = self.grants.get(grant.task)
        if old is not None:
            self._lose(old)
        self.grants[grant.task] = grant
        task = asyncio.create_task(self._run_grant(grant))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _lose(self, grant: Grant) -> None:
        grant.lost = True
        grant.abort.set()

    # --- one grant (spec 40 §4.4) -------------------------------------------------------------

    async def _run_grant(self, grant: Grant) -> None:
        sender = asyncio.create_task(self._sender(grant))
        try:
            outcome = await self._run_routine(grant)
            await grant.queue.join()
            if outcome is not None and not grant.lost and not self.forced:
                grant.reporting = True
                await self._report(grant, outcome)
        except Exception:
            log.exception("task %s of %s: could not finish", grant.task, grant.token)
        finally:
            sender.cancel()
            if grant.lost:
                self.outbox.remove_attempt(grant.task, grant.attempt)
            if self.grants.get(grant.task) is grant:
                del self.grants[grant.task]
            self._wake.set()

    async def _run_routine(self, grant: Grant) -> dict[str, Any] | None:
        """The routine's outcome, or None when the grant was lost or a forced stop began."""
        routine = self.registry.routines.get(grant.state)
        if routine is None:
            return failed(f"this supervisor has no routine for {grant.state!r}", grant.attempt)
        state, function = routine
        ctx: Context[Any] = Context(
            token=grant.token,
            task=grant.task,
            visit=grant.visit,
            attempt=grant.attempt,
            context=grant.context,
            memory=grant.memory,
            entered_by=grant.entered_by,
            sink=_Sink(self, grant),
        )
        grant.running = True
        try:
            work = self._start_routine(grant, function, ctx)
            aborted: asyncio.Future[Any] = asyncio.ensure_future(grant.abort.wait())
            done, _ = await asyncio.wait({work, aborted}, return_when=asyncio.FIRST_COMPLETED)
            aborted.cancel()
            if work not in done:
                if grant.lost:
                    log.warning(
                        "task %s of %s: the control plane took it back; cancelling its routine",
                        grant.task,
                        grant.token,
                    )
                work.cancel()
                await asyncio.wait({work})
                return None
        finally:
            grant.running = False
        ok, value = work.result()
        if not ok:
            return failed(value, grant.attempt)
        return outcome_of(value, state, ctx, grant.attempt)

    def _start_routine(
        self, grant: Grant, function: Callable[..., Any], ctx: Context[Any]
    ) -> asyncio.Future[tuple[bool, Any]]:
        """Start the routine; its future answers (True, result) or (False, error text)."""
        if inspect.iscoroutinefunction(function):

            async def guarded() -> tuple[bool, Any]:
                try:
                    return True, await function(ctx)
                except asyncio.CancelledError:
                    raise
                except BaseException as exc:  # SystemExit too: a routine's failure, not ours
                    return False, error_text(exc)

            return asyncio.ensure_future(guarded())
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[bool, Any]] = loop.create_future()

        def settle(result: tuple[bool, Any]) -> None:
            if not future.done():
                future.set_result(result)

        def in_thread() -> None:
            try:
                result: tuple[bool, Any] = (True, function(ctx))
            except BaseException as exc:
                result = (False, error_text(exc, in_thread=True))
            if not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed: the result is ignored
                    loop.call_soon_threadsafe(settle, result)

        grant.thread = threading.Thread(target=in_thread, name=f"routine-{grant.task}", daemon=True)
        grant.thread.start()
        return future

    # --- delivering messages (spec 40 §4.7) ---------------------------------------------------

    async def _sender(self, grant: Grant) -> None:
        while True:
            message = await grant.queue.get()
            try:
                if not grant.stuck and not grant.lost and not await self._deliver(message):
                    grant.stuck = True
            finally:
                grant.queue.task_done()

    async def _deliver(self, message: Message) -> bool:
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
            self.outbox.remove(message.id)
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
        body = {**message.body, "attempt": message.attempt}
        if message.kind == "note":
            path, method = f"/tasks/{message.task}/note", "POST"
        else:
            path, method = f"/tasks/{message.task}/memory", "PUT"
        answer = await self._persist(lambda: self.remote.call(method, path, body))
        if answer is None:
            return self._stays(message)
        if not answer.ok:
            log.warning(
                "task %s: the control plane refused a %s: %s",
                message.task,
                message.kind,
                answer.sentence,
            )
        await asyncio.to_thread(self.outbox.remove, message.id)
        return True

    async def _deliver_report(self, message: Message) -> bool:
        body = {**message.body, "attempt": message.attempt, "supervisor": self.settings.name}
        path = f"/tasks/{message.task}/report"
        answer = await self._persist(lambda: self.remote.call("POST", path, body))
        if answer is None:
            return self._stays(message)
        if answer.ok:
            # Off the event loop: the outbox's commit waits for the disk (claims go on meanwhile).
            await asyncio.to_thread(self.outbox.remove, message.id)
            outcome = message.body.get("kind")
            shown = message.body.get("event") if outcome == "event" else outcome
            log.info("task %s of %s: reported %s", message.task, message.token, shown)
            return True
        if message.body.get("kind") == "failed":
            error = str(message.body.get("error", ""))
            what = "the failure report too" if error.startswith(_REFUSED_REPORT) else "the report"
            self._refused(message, answer, what)
            self.outbox.remove(message.id)
            return True
        self._refused(message, answer, "the report")
        if answer.status == 404 or answer.code == "attempt_over":
            self.outbox.remove(message.id)
            return True
        if answer.status == 409:
            held = await self._still_held(message)
            if held is not True:
                self.outbox.remove(message.id)
                return True
        replacement = self.outbox.add(
            message.task,
            message.attempt,
            message.token,
            "report",
            failed(_REFUSED_REPORT + answer.sentence, message.attempt),
        )
        self.outbox.remove(message.id)
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
        try:
            body = {"supervisor": self.settings.name, "tasks": [message.task]}
            answer = await self._persist(lambda: self.remote.call("POST", "/tasks/heartbeat", body))
            if answer is None or not answer.ok or not isinstance(answer.body, dict):
                raise ValueError(f"the heartbeat got {answer!r}")
            return message.task not in answer.body.get("lost", [])
        except Exception:
            log.exception("task %s of %s: could not check the task", message.task, message.token)
            return None

    async def _report(self, grant: Grant, outcome: dict[str, Any]) -> None:
        try:
            message = await asyncio.to_thread(
                self.outbox.add, grant.task, grant.attempt, grant.token, "report", outcome
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
        await self._deliver(message)

    async def _send_leftovers(self) -> None:
        """Send what the outbox holds from an earlier run, in id order (spec 40 §5.3)."""
        messages = self.outbox.pending()
        if not messages:
            return
        log.info("sending %s message(s) left in the outbox", len(messages))
        stuck: set[int] = set()
        for message in messages:
            if message.task in stuck:
                continue
            if not await self._deliver(message):
                stuck.add(message.task)
                if self.stopping:
                    return

    # --- heartbeats (spec 40 §4.5) ------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.timings.heartbeat)
            try:
                await self._heartbeat()
            except Exception:
                log.exception("a heartbeat failed")

    async def _status_loop(self) -> None:
        """Rewrite status.json at the pace of heartbeats, also while a heartbeat waits to retry."""
        while True:
            await asyncio.sleep(self.timings.heartbeat)
            self._write_status()

    async def _heartbeat(self) -> None:
        ids = sorted({task for task, grant in self.grants.items() if not grant.lost})
        if not ids:
            return
        body = {"supervisor": self.settings.name, "tasks": ids}
        answer = await self._persist(lambda: self.remote.call("POST", "/tasks/heartbeat", body))
        if answer is None:
            return
        if not answer.ok:
            log.warning("the control plane refused a heartbeat: %s", answer.sentence)
            return
        self.last_heartbeat = datetime.now(UTC).isoformat()
        lost = answer.body.get("lost", []) if isinstance(answer.body, dict) else []
        for task in lost:
            grant = self.grants.get(task) if isinstance(task, int) else None
            if grant is not None and not grant.reporting and not grant.lost:
                self._lose(grant)

    def _write_status(self) -> None:
        """Rewrite `.stateous/status.json` for the console (name, pid, running grants...)."""
        status = {
            "name": self.settings.name,
            "pid": os.getpid(),
            "url": self.url,
            "started_at": self.started_at,
            "last_heartbeat": self.last_heartbeat,
            "outbox": self.outbox.count(),
            "running": [
                {
                    "task": g.task,
                    "token": g.token,
                    "state": g.state,
                    "attempt": g.attempt,
                    "started_at": g.started_at,
                }
                for g in self.grants.values()
            ],
        }
        target = self.outbox.path.parent / "status.json"
        temporary = target.with_suffix(".json.tmp")
        try:
            temporary.write_text(json.dumps(status, indent=2) + "\n", encoding="utf-8")
            os.replace(temporary, target)
        except OSError as exc:
            log.warning("cannot write %s: %s", target, exc)


def supervise_folder(folder: Path) -> int:
    """Run `stateous supervise FOLDER` to its end; answers the exit code.

    Raises StateousError (FolderError, OutboxError, StartError) before the supervisor runs.
    """
    from stateous.supervisor.folder import read_folder

    settings = read_folder(folder)
    outbox = Outbox(folder)
    try:
        return asyncio.run(_main(settings, outbox))
    finally:
        outbox.close()


async def _main(settings: Settings, outbox: Outbox) -> int:
    supervisor = Supervisor(settings, outbox)
    # A stop signal before the handlers of §4.9 are in place ends the command with exit 1.
    interrupted = asyncio.Event()

    def interrupt() -> None:
        interrupted.set()
        supervisor.stopping = True
        supervisor._stop.set()

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, interrupt)
    try:
        await supervisor.start()
    except StartError:
        if interrupted.is_set():
            return 1
        raise
    if interrupted.is_set():
        return 1
    supervisor.install_signals()
    code = await supervisor.run()
    if supervisor.forced:
        # Routines that ignore their cancellation and abandoned threads must not hold the exit.
        logging.shutdown()
        outbox.close()
        os._exit(1)
    return code


def embedded(folder: Path) -> Callable[[str], Awaitable[int]]:
    """The supervisor of `stateous serve GRAPH --supervise FOLDER` (spec 40 §4.11).

    The folder is read and checked now, before the server starts (FolderError stops `serve`).
    The answer runs the supervisor against the server's own URL, once the server is up, and
    answers its exit code; a start-up error is printed as `error: <sentence>` (exit 1).
    """
    import sys

    from stateous.supervisor.folder import read_folder
    from stateous.supervisor.logs import configure_logging

    settings = read_folder(folder)
    configure_logging()

    async def run(url: str) -> int:
        outbox: Outbox | None = None
        try:
            outbox = Outbox(folder)
            # In one process with its control plane, a stop must not wait out a 10 s claim:
            # a 1 s long-poll still starts each task within milliseconds.
            timings = Timings.from_env()
            timings = replace(timings, wait=min(timings.wait, _EMBEDDED_WAIT))
            supervisor = Supervisor(settings, outbox, url=url, timings=timings)
            await supervisor.start()
            supervisor.install_signals()
            return await supervisor.run()
        except StateousError as exc:
            print(f"error: {exc.message}", file=sys.stderr, flush=True)
            return 1
        finally:
            if outbox is not None:
                outbox.close()

    return run
