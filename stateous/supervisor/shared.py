"""What the parts of one running supervisor share: its settings, outbox, control plane, grants,
its stop, the retry policy of its calls (1, 2, 4, 8, 16, then 30 seconds, at most
`max_retry`), and whether the control plane answers."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stateous.model.environment import DEFAULTS, environment
from stateous.supervisor.folder import Registry, Settings
from stateous.supervisor.grant import Grant
from stateous.supervisor.outbox import Message, Outbox
from stateous.supervisor.remote import Answer, NoAnswer, Remote
from stateous.supervisor.tally import EVERY, Tally
from stateous.supervisor.threads import RoutineThreads

__all__ = ["Shared", "Timings", "retry_delay", "wait_for"]

log = logging.getLogger("stateous.supervisor")

_DELAYS = (1, 2, 4, 8, 16, 30)


@dataclass(frozen=True)
class Timings:
    """The supervisor's timings in seconds: the documented defaults, which tests shorten (each but
    `tally` is described by its `STATEOUS_SUPERVISOR_*` variable in stateous.model.environment)."""

    heartbeat: float = DEFAULTS.supervisor_heartbeat
    idle: float = DEFAULTS.supervisor_idle
    max_retry: float = DEFAULTS.supervisor_max_retry
    wait: float = DEFAULTS.supervisor_wait  # 0: claims without a long-poll
    beat: float = DEFAULTS.supervisor_beat
    tally: float = EVERY  # between two lines of the tally (no variable: tests pass it)

    @classmethod
    def from_env(cls) -> Timings:
        """The timings of the `STATEOUS_SUPERVISOR_*` variables (their defaults when unset)."""
        env = environment()
        return cls(
            heartbeat=env.supervisor_heartbeat,
            idle=env.supervisor_idle,
            max_retry=env.supervisor_max_retry,
            wait=env.supervisor_wait,
            beat=env.supervisor_beat,
        )


def retry_delay(tries: int, max_retry: float) -> float:
    """The wait before the next try of a call that failed `tries` times before this one."""
    return min(_DELAYS[min(tries, len(_DELAYS) - 1)], max_retry)


async def wait_for(event: asyncio.Event, seconds: float) -> bool:
    """Wait up to `seconds` for `event`; answers whether it is set."""
    try:
        await asyncio.wait_for(event.wait(), timeout=seconds)
    except TimeoutError:
        return event.is_set()
    return True


class Shared:
    """The state of one running supervisor that its claim loop, grant runner, sender and
    heartbeats read and change; all of them run on one event loop."""

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
        # Long-poll claims until the control plane refuses the field.
        self.long_poll = self.timings.wait > 0
        self.registry = Registry({})
        self.threads = RoutineThreads()  # where `def` routines run
        self.tally = Tally()  # the tasks reported since the last line a minute
        self.grants: dict[int, Grant] = {}
        self.stopping = False
        self.forced = False
        self.started_at = datetime.now(UTC).isoformat()
        self.last_heartbeat: str | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.stop_event = asyncio.Event()  # set by the first stop signal
        self.wake = asyncio.Event()  # set when a routine ends or a stop arrives
        self.ready = asyncio.Event()  # set when a grant has a message for the sender
        # Claim several tasks at once until the control plane refuses the field.
        self.claim_several = True
        #: The checksum the control plane serves, as its `GET /health` last said.
        self.served: str | None = None
        # A call got no answer, or the claims were refused, since the last answer or grant:
        # the first that comes after says the control plane answers again, once.
        self.unreachable = False
        self.claims_refused = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0

    def bind(self) -> None:
        """Remember the running event loop, for the threads of `def` routines."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run `work` as a task that the supervisor waits for before it exits."""
        task = asyncio.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def enqueue(self, grant: Grant, message: Message) -> None:
        """Hand a committed message to the sender, behind the grant's others, from any thread."""
        if threading.get_ident() == self._loop_thread:
            self._queue(grant, message)
        elif self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._queue, grant, message)

    def _queue(self, grant: Grant, message: Message) -> None:
        if grant.lost:
            return  # the runner removes the attempt's messages from the outbox
        grant.pending.append(message)
        grant.drained.clear()
        self.ready.set()

    @staticmethod
    def lose(grant: Grant) -> None:
        """The control plane took the grant back: its routine is cancelled, its messages that
        wait are not sent (the runner removes them from the outbox)."""
        grant.lost = True
        grant.abort.set()
        grant.pending.clear()
        if not grant.sending:
            grant.drained.set()

    async def idle(self) -> None:
        """Wait a second, or less when a routine ends or a stop arrives (none once it has)."""
        if self.stopping:
            return  # the stop's `wake` may be cleared below: it would wait the second out
        self.wake.clear()
        await wait_for(self.wake, self.timings.idle)

    async def persist(self, call: Callable[[], Awaitable[Answer]]) -> Answer | None:
        """Call until an answer comes; None when a stop has begun and the call got none."""
        tries = 0
        while True:
            try:
                answer = await call()
            except NoAnswer as exc:
                if self.stopping:
                    return None
                delay = retry_delay(tries, self.timings.max_retry)
                tries += 1
                self.unreachable = True
                log.warning("%s; trying again in %ss", exc.text, f"{delay:g}")
                if await wait_for(self.stop_event, delay):
                    return None
            else:
                if self.unreachable:
                    self.unreachable = False
                    self._answers_again()
                return answer

    def claims_refused_now(self) -> None:
        """A claim was refused (other than for a field an older control plane lacks)."""
        self.claims_refused = True

    def claim_answered(self) -> None:
        """A claim was answered `200` or `204`: the claims go on as they should."""
        if self.claims_refused:
            self.claims_refused = False
            self._answers_again()

    def _answers_again(self) -> None:
        """Say once that the control plane is back, when nothing is wrong with it any more."""
        if not (self.unreachable or self.claims_refused):
            log.info("the control plane at %s answers again", self.remote.url)
