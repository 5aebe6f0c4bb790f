"""`stateous supervise`: the `Supervisor` that wires its parts together.

One asyncio loop runs the heartbeat loop (`heartbeats`), the beat (`beat`), the claim loop
(`claims`), one task per grant (`runner`: an `async def` routine directly, a `def` routine in a
daemon thread of its own) and one sender for every grant (`sender`), which delivers each grant's
notes and memory writes in order, before its report, several at once when they are ready
together, the line a minute (`tally`), and a look at the version the control plane serves
(`versions`). Start-up is in `startup`, `.stateous/status.json` in
`status`, the shared state and the retry policy in `shared`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from stateous.event_loop import loop_factory
from stateous.model.errors import STOPPED_WHILE_STARTING, Interrupted, StateousError
from stateous.supervisor import tracing
from stateous.supervisor.beat import Beats
from stateous.supervisor.claims import ClaimLoop
from stateous.supervisor.folder import Settings
from stateous.supervisor.heartbeats import Heartbeats
from stateous.supervisor.outbox import Outbox
from stateous.supervisor.remote import Remote
from stateous.supervisor.runner import GrantRunner
from stateous.supervisor.sender import Sender
from stateous.supervisor.shared import Shared, Timings
from stateous.supervisor.startup import StartError, start
from stateous.supervisor.status import status_loop, write_status
from stateous.supervisor.tally import tally_loop
from stateous.supervisor.versions import VersionWatch

__all__ = ["StartError", "Supervisor", "Timings", "embedded", "supervise_folder"]

log = logging.getLogger("stateous.supervisor")

_EMBEDDED_WAIT = 1.0


class Supervisor(Shared):
    """One supervisor: its shared state, and the parts that claim, run, send and beat."""

    def __init__(
        self,
        settings: Settings,
        outbox: Outbox,
        *,
        url: str | None = None,
        timings: Timings | None = None,
        remote: Remote | None = None,
    ) -> None:
        super().__init__(settings, outbox, url=url, timings=timings, remote=remote)
        self.sender = Sender(self)
        self.runner = GrantRunner(self, self.sender)
        # Through `_take`, so that a test may stand in for the runner.
        self.claims = ClaimLoop(self, self.sender.send_leftovers, lambda body: self._take(body))
        self.heartbeats = Heartbeats(self)
        self.beats = Beats(self)
        self.versions = VersionWatch(self)

    @property
    def _stop(self) -> asyncio.Event:
        return self.stop_event

    @property
    def _wake(self) -> asyncio.Event:
        return self.wake

    async def start(self) -> None:
        """Check health and checksum, import the routines, and log what this supervisor serves."""
        self.bind()
        await start(self)

    def install_signals(self, *, hangup: bool = False) -> None:
        """SIGINT and SIGTERM stop the supervisor: gracefully, then at once;
        with `hangup`, SIGHUP (a closed terminal) too."""
        loop = asyncio.get_running_loop()
        for signum in stop_signals(hangup=hangup):
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
            self.stop_event.set()
            self.wake.set()
            self.claims.cut()
        elif not self.forced:
            self.forced = True
            log.warning("stopping now: cancelling %s routine(s)", running)
            for grant in self.grants.values():
                grant.abort.set()

    async def run(self) -> int:
        """Claim and run tasks until a stop; answers the exit code (0 graceful, 1 forced)."""
        heartbeat = asyncio.create_task(self.heartbeats.run())
        status = asyncio.create_task(status_loop(self))
        sender = asyncio.create_task(self.sender.run())
        beats = asyncio.create_task(self.beats.run())
        tally = asyncio.create_task(tally_loop(self.tally, self.timings.tally))
        versions = asyncio.create_task(self.versions.run())
        write_status(self)
        try:
            await asyncio.create_task(self._claim_loop())
            while self.tasks and not self.forced:
                await asyncio.wait(set(self.tasks), return_when=asyncio.FIRST_COMPLETED)
                if self.forced:
                    break
            if self.forced:
                await self._forced_exit()
                return 1
            beats.cancel()
            await self.beats.last()
            return 0
        finally:
            heartbeat.cancel()
            status.cancel()
            sender.cancel()
            beats.cancel()
            tally.cancel()
            versions.cancel()
            write_status(self)
            await self.remote.aclose()

    async def _claim_loop(self) -> None:
        await self.claims.run()

    def _take(self, body: object) -> None:
        self.runner.take(body)

    async def _forced_exit(self) -> None:
        pending = {t for t in self.tasks if not t.done()}
        if pending:
            _, pending = await asyncio.wait(pending, timeout=5.0)
            if pending:
                log.warning("%s routine(s) did not stop; exiting without them", len(pending))
        finishing = [g.finished for g in self.grants.values() if g.finished is not None]
        for finished in finishing:
            if not await asyncio.to_thread(finished.wait, 2.0):
                log.warning("a thread of a routine did not stop; exiting without it")
                break


def stop_signals(*, hangup: bool) -> list[signal.Signals]:
    """The signals that stop a supervisor. `hangup` adds SIGHUP (where there is one): a plain
    `stateous supervise` whose terminal closed stops as for SIGTERM, not killed mid-report
    (SIGHUP's default); in `serve --supervise` the server keeps its own."""
    signals = [signal.SIGINT, signal.SIGTERM]
    hup = getattr(signal, "SIGHUP", None)  # none on Windows
    if hangup and hup is not None:
        signals.append(hup)
    return signals


def supervise_folder(folder: Path) -> int:
    """Run `stateous supervise FOLDER` to its end; answers the exit code.

    Raises StateousError (FolderError, OutboxError, StartError) before the supervisor runs.
    """
    from stateous.supervisor.folder import read_folder

    settings = read_folder(folder)
    outbox = Outbox(folder)
    tracing.setup()  # only when OTEL_* asks for traces
    try:
        return asyncio.run(_main(settings, outbox), loop_factory=loop_factory())
    finally:
        outbox.close()


async def _main(settings: Settings, outbox: Outbox) -> int:
    supervisor = Supervisor(settings, outbox)
    # A stop signal before the stop handlers are in place ends the command with exit 1, saying
    # that it stopped while starting.
    interrupted = asyncio.Event()

    def interrupt() -> None:
        interrupted.set()
        supervisor.stopping = True
        supervisor.stop_event.set()

    loop = asyncio.get_running_loop()
    for signum in stop_signals(hangup=True):
        loop.add_signal_handler(signum, interrupt)
    try:
        await supervisor.start()
    except StartError:
        if interrupted.is_set():
            raise Interrupted(STOPPED_WHILE_STARTING, exit_code=1) from None
        raise
    if interrupted.is_set():
        raise Interrupted(STOPPED_WHILE_STARTING, exit_code=1)
    supervisor.install_signals(hangup=True)
    code = await supervisor.run()
    if supervisor.forced:
        # Routines that ignore their cancellation and abandoned threads must not hold the exit.
        logging.shutdown()
        outbox.close()
        os._exit(1)
    return code


def embedded(folder: Path) -> Callable[[str], Awaitable[int]]:
    """The supervisor of `stateous serve GRAPH --supervise FOLDER`.

    The folder is read and checked now, before the server starts (FolderError stops `serve`).
    The answer runs the supervisor against the server's own URL, once the server is up, and
    answers its exit code; a start-up error is printed as `error: <sentence>` (exit 1).
    """
    import sys

    from stateous.supervisor.folder import read_folder
    from stateous.supervisor.logs import configure_logging

    settings = read_folder(folder)
    configure_logging()
    tracing.setup()  # the server's tracer, when it traces

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
