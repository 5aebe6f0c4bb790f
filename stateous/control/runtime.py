"""`stateous serve` at run time: start-up in its fixed order, the server, the clock, the stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import uvicorn
from anyio import to_thread
from sqlalchemy.exc import SQLAlchemyError

from stateous.control import checkpoints, tracing
from stateous.control.api.app import create_app
from stateous.control.api.lean import LeanRoutes
from stateous.control.api.protocol import protocol_class
from stateous.control.bulk_runner import BulkRunner
from stateous.control.clock import Clock, SystemClock
from stateous.control.engine.search import settle_keys
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import StoreError
from stateous.control.hold import Hold, HoldRefused
from stateous.control.listen import bind, is_wide, local_url, parse_listen
from stateous.control.listener import Listener, close_quietly
from stateous.control.plane import Plane
from stateous.control.presence import Presence
from stateous.control.replica import open_replica
from stateous.control.retention_runner import RetentionRunner
from stateous.control.search_filler import SearchFiller
from stateous.control.served import (
    follow_current,
    load_versions,
    older_versions_line,
    record_served,
)
from stateous.control.settings import Settings
from stateous.control.stats_folder import StatsFolder
from stateous.control.store.db import Store, make_engine, mask_url
from stateous.control.ticker import Ticker
from stateous.model import logs
from stateous.model.errors import STOPPED_WHILE_STARTING, Interrupted, StateousError
from stateous.model.graph import Graph, read_graph_file

log = logging.getLogger("stateous.clock")

#: The exit of a control plane whose database another one took.
LOST = "another control plane took the database; this control plane stopped"

#: `extra(url)`: a task run beside the server once it is up (the supervisor of `--supervise`);
#: its result, when not None, is the exit code, and the server stops when it ends.
Extra = Callable[[str], Awaitable[int | None]]


def setup_logging() -> None:
    """Log lines on stderr as `<time> <logger>: <message>`; no lines of the HTTP server's own."""
    logs.configure_logging()
    # uvicorn's warnings (a malformed request, say) are answered with the refusal envelope
    # already; its lines would only repeat them.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    # psycopg warns, over several lines, about a pipeline it could not close on a connection the
    # server ended; the store already answers `database_busy` and logs the hold's own lines.
    logging.getLogger("psycopg").setLevel(logging.ERROR)


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def open_store(settings: Settings) -> Store:
    """The database of `--db` (nothing is read yet); refuses a URL that cannot be opened."""
    try:
        return Store(make_engine(settings.db_url, wal_autocheckpoint=checkpoints.BACKSTOP))
    except (SQLAlchemyError, ValueError, ImportError) as exc:
        url = mask_url(settings.db_url)
        raise StateousError(f"cannot open the database {url}: {_reason(exc)}") from exc


def open_plane(settings: Settings, graph: Graph, clock: Clock) -> tuple[Plane, Hold]:
    """Open the database, take the hold, migrate, check the structure."""
    url = mask_url(settings.db_url)
    store = open_store(settings)
    hold = Hold(store, clock, lapse=settings.sqlite_hold_lapse, renew_every=settings.since_every)
    try:
        hold.take_and_migrate()
    except HoldRefused:
        store.engine.dispose()
        raise
    except StoreError as exc:
        store.engine.dispose()
        raise StateousError(f"cannot use the database {url}: {exc.message}") from exc
    except (SQLAlchemyError, OSError) as exc:
        store.engine.dispose()
        raise StateousError(f"cannot open the database {url}: {_reason(exc)}") from exc
    try:
        serve_version(store, graph, clock)
        versions = load_versions(store, graph)
    except BaseException:
        hold.give_up()
        store.engine.dispose()
        raise
    return Plane(store, EngineConfig(graph, settings.lease, versions), clock), hold


def serve_version(store: Store, graph: Graph, clock: Clock) -> None:
    """Record the graph as a version and make it current; tokens of other versions run on
    (another structure is no refusal)."""
    try:
        with store.begin() as conn:
            record_served(conn, graph, clock.now())
            settle_keys(conn, graph, clock.now())  # the keys with nothing to fill
    except SQLAlchemyError as exc:
        raise StateousError(f"cannot use the database: {_reason(exc)}") from exc


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: `serve` decides what a signal does."""

    #: Called as the shutdown begins: releases long-poll claims so they answer now.
    on_shutdown: Callable[[], None] | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def shutdown(self, sockets: list[Any] | None = None) -> None:
        """Release the waiting claims, then uvicorn's own graceful shutdown."""
        if self.on_shutdown is not None:
            self.on_shutdown()
        await super().shutdown(sockets)


class ControlPlane:
    """A started control plane: the server, its clock and its hold."""

    def __init__(self, settings: Settings, plane: Plane, hold: Hold, url: str = "") -> None:
        self.settings = settings
        self.plane = plane
        self.hold = hold
        self.url = url
        self.lost = False
        self.stop_event = asyncio.Event()
        app = create_app(
            plane,
            auth_token=settings.auth_token,
            auth_names=dict(settings.auth_names),
            auth_grants=dict(settings.auth_grants) or None,
        )
        app.state.presence_every = settings.since_every  # GET /control-planes
        config = uvicorn.Config(
            LeanRoutes(app), log_config=None, access_log=False, lifespan="off",
            timeout_graceful_shutdown=int(settings.stop_wait), server_header=False,
            http=protocol_class(),
        )  # fmt: skip
        self.server = _Server(config)
        self.server.on_shutdown = plane.wakeups.close
        hold.on_taken = self._took_hold
        self._loop = asyncio.get_running_loop()
        self.holding = asyncio.Event()
        if hold.holding:
            self.holding.set()
        self.presence = Presence(
            plane.store, plane.clock, hold.name, lambda: hold.role, settings.since_every
        )
        # Wake-ups from the other control planes on the same database.
        self.listener = (
            None if plane.store.sqlite else Listener(plane.store.engine.url, plane.wakeups)
        )

    def _took_hold(self) -> None:
        """A replica took the hold (its clock logged it): it is the holder from now on, and
        its own graph file the current version."""
        self.plane.role = "holder"
        graph = read_graph_file(self.settings.graph_path)
        serve_version(self.plane.store, graph, self.plane.clock)
        self.plane.config.versions.make_current(graph)
        # Called in the clock's worker thread: the event belongs to the event loop.
        self._loop.call_soon_threadsafe(self.holding.set)

    async def clock(self) -> None:
        """The clock (stateous.control.ticker): the hold, lease expiry, timers; every tick.

        A replica's clock only tries the hold until it gets it."""
        hold = self.hold
        store, versions = self.plane.store, self.plane.config.versions
        ticker = Ticker(
            self.plane,
            hold,
            self.settings.tick,
            runs_clock=lambda: hold.holding,
            follow=lambda: follow_current(store, versions),
        )
        if not await ticker.run(self.stop_event):
            self.take_over()

    async def _until_holding(self) -> bool:
        """Wait until this control plane holds the database (True) or stops (False)."""
        stop = asyncio.ensure_future(self.stop_event.wait())
        took = asyncio.ensure_future(self.holding.wait())
        await asyncio.wait({stop, took}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        took.cancel()
        return not self.stop_event.is_set()

    async def bulk_jobs(self) -> None:
        """The holder applies bulk jobs beside the clock; a replica once it holds."""
        if await self._until_holding():
            await BulkRunner(self.plane).run(self.stop_event)

    async def search_keys(self) -> None:
        """The holder fills the search keys added to a served graph."""
        if await self._until_holding():
            await SearchFiller(self.plane).run(self.stop_event)

    async def stats_counts(self) -> None:
        """The holder folds the deltas of `GET /stats` into its counts (Postgres)."""
        if await self._until_holding():
            await StatsFolder(self.plane).run(self.stop_event)

    async def retention(self) -> None:
        """`--retain`: the holder prunes ended tokens older than it; a replica
        once it holds."""
        retain = self.settings.retain
        if retain is not None and await self._until_holding():
            s = self.settings
            runner = RetentionRunner(
                self.plane, retain, rest=s.retain_rest, idle=s.retain_idle,
                log_every=s.retain_log_every,
            )  # fmt: skip
            await runner.run(self.stop_event)

    def take_over(self) -> None:
        """Another control plane took the database (the clock logged it): refuse requests, stop."""
        self.lost = True
        self.plane.serving = False
        self.plane.wakeups.close()
        self.server.should_exit = True

    def on_signal(self, *_args: Any) -> None:
        """First signal: a graceful stop; second: at once."""
        if self.server.should_exit:
            self.server.force_exit = True
        self.server.should_exit = True

    async def serve(self, sock: Any, extra: Extra | None) -> int:
        """Run until a stop; answer the exit code."""
        if self.listener is not None:
            self.listener.start()
        clock_task = asyncio.create_task(self.clock())
        bulk_task = asyncio.create_task(self.bulk_jobs())
        search_task = asyncio.create_task(self.search_keys())
        retention_task = asyncio.create_task(self.retention())
        stats_task = asyncio.create_task(self.stats_counts())
        presence_task = asyncio.create_task(self.presence.run(self.stop_event))
        checkpoint_task = asyncio.create_task(
            checkpoints.run_checkpoints(self.plane.store, self.stop_event)
        )
        serve_task = asyncio.create_task(self.server.serve(sockets=[sock]))
        extra_code: int | None = None
        extra_task = asyncio.create_task(self._extra(extra)) if extra is not None else None
        await serve_task
        self.stop_event.set()
        await clock_task
        await bulk_task
        await search_task
        await retention_task
        await stats_task
        await presence_task
        await checkpoint_task
        await to_thread.run_sync(close_quietly, self.listener)
        if extra_task is not None:
            extra_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                extra_code = await extra_task
        await to_thread.run_sync(self.presence.leave)
        if self.lost:
            return 1
        with contextlib.suppress(Exception):
            await to_thread.run_sync(self.hold.give_up)
        return extra_code or 0

    async def _extra(self, extra: Extra) -> int | None:
        while not self.server.started and not self.server.should_exit:
            await asyncio.sleep(0.02)
        code = await extra(self.url)
        self.server.should_exit = True
        return code


async def _open(settings: Settings, graph: Graph, clock: Clock) -> tuple[Plane, Hold]:
    """Open the database and check the structure: the holder's start, or a replica's."""
    if not settings.replica:
        return await _open_holding(settings, graph, clock)
    store = await to_thread.run_sync(open_store, settings)
    return await open_replica(settings, graph, clock, store)


async def _open_holding(settings: Settings, graph: Graph, clock: Clock) -> tuple[Plane, Hold]:
    """`open_plane` in a thread. A Ctrl-C cannot stop that thread: it is waited for, and what
    it took (the hold, the database) is given back before the cancellation goes on, so that a
    start stopped half-way leaves the database free for the next `serve`."""
    work = asyncio.ensure_future(to_thread.run_sync(open_plane, settings, graph, clock))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):  # a refusal no longer matters: it stops anyway
            plane, hold = await work
            await to_thread.run_sync(_give_back, plane, hold)
        raise


def _give_back(plane: Plane, hold: Hold) -> None:
    """Give up the hold of a plane that will not serve, and close its database."""
    try:
        hold.give_up()
    finally:
        plane.store.engine.dispose()


#: A closed terminal (SIGHUP) stops `serve` as SIGTERM does; Windows has no SIGHUP.
_SIGHUP: signal.Signals | None = getattr(signal, "SIGHUP", None)


def _hang_up() -> None:
    """SIGHUP: send ourselves SIGTERM, which reaches whoever handles the stop at this moment.

    With `--supervise`, the embedded supervisor replaces the server's SIGTERM handler with its
    own graceful stop, which then stops the server; without it, the server stops.
    """
    os.kill(os.getpid(), signal.SIGTERM)


async def run_control_plane(
    settings: Settings, extra: Extra | None = None, clock: Clock | None = None
) -> int:
    """Start up (parse `--listen`, read the graph file, bind the port, open the database and
    take the hold, check the structure, say where it serves), then serve until stopped; answer
    the exit code.

    Raises StateousError (printed as `error: <sentence>`, exit 1) for every refusal to start,
    with no port bound and no database held, and Interrupted (`stopped while starting`, exit
    130) for a Ctrl-C before it serves, holding nothing either. Prints `stopped` after a clean
    stop, or the `error:` line of a lost hold (exit 1).
    """
    listen = parse_listen(settings.listen)
    graph = read_graph_file(settings.graph_path)
    tracing.setup()  # only when OTEL_* asks for traces
    sock = bind(listen)
    try:
        plane, hold = await _open(settings, graph, clock or SystemClock())
    except asyncio.CancelledError:  # Ctrl-C while it migrates, connects or waits for the schema
        sock.close()
        raise Interrupted(STOPPED_WHILE_STARTING) from None
    except BaseException:
        sock.close()
        raise
    running = ControlPlane(settings, plane, hold)
    url = running.url = local_url(listen, sock)
    if is_wide(listen) and settings.auth_token is None:
        print(
            f"warning: other computers can reach {listen.host}, and the API has no "
            "authentication; put a proxy or a VPN in front of it",
            file=sys.stderr,
        )
    loop = asyncio.get_running_loop()
    handlers: dict[int, Callable[[], None]] = dict.fromkeys(
        (signal.SIGINT, signal.SIGTERM), running.on_signal
    )
    if _SIGHUP is not None:
        handlers[_SIGHUP] = _hang_up
    for sig, handler in handlers.items():
        loop.add_signal_handler(sig, handler)
    print(f"serving on {url} (Ctrl-C stops)", file=sys.stderr, flush=True)
    current = plane.config.graph
    older = plane.store.read(lambda conn: older_versions_line(conn, current))
    if older is not None:
        print(older, file=sys.stderr, flush=True)
    try:
        code = await running.serve(sock, extra)
    finally:
        for sig in handlers:
            loop.remove_signal_handler(sig)
        plane.store.engine.dispose()
    if running.lost:
        print(f"error: {LOST}", file=sys.stderr, flush=True)
        return 1
    print("stopped", file=sys.stderr, flush=True)
    return code
