"""`stateous serve` and `stateous supervise` as real processes: the one way the tests and the
benches start them, read their logs, wait until they are ready, and stop them.

A child's stderr goes to a pipe that a thread reads into a queue (the tests read it as it comes),
or, with `log=`, to a file that `read_lines` follows (the benches keep their logs, and read
nothing while they measure).
"""

from __future__ import annotations

import os
import queue
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypedDict, Unpack

import httpx

ROOT = Path(__file__).resolve().parents[2]
#: The short timings of a supervisor under test (each may be overridden by `env`).
SUPERVISE_FAST = {
    "STATEOUS_SUPERVISOR_HEARTBEAT": "0.5",
    "STATEOUS_SUPERVISOR_IDLE": "0.2",
    "STATEOUS_SUPERVISOR_MAX_RETRY": "0.5",
    "STATEOUS_SUPERVISOR_WAIT": "1",
}
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} stateous\.supervisor: (.*)$")


def stateous_argv(*args: str) -> list[str]:
    """The argv of a `stateous` command run by this checkout's Python."""
    return [sys.executable, "-m", "stateous", *args]


def serve_command(graph: Path | str, db_url: str, listen: str, *extra: str) -> list[str]:
    """The argv of `stateous serve GRAPH --db URL --listen LISTEN EXTRA...`."""
    return stateous_argv("serve", str(graph), "--db", db_url, "--listen", listen, *extra)


# ---------------------------------------------------------------------------------- a child


@dataclass
class Piped:
    """A child process and the lines of its stderr so far, read from a pipe or from `log`."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    log: Path | None = None
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)
    _reader: threading.Thread | None = None
    _ended: bool = False  # the end of stderr was read
    _log_offset: int = 0
    _partial: str = ""

    def start_reading(self) -> None:
        """Start the thread that reads a piped stderr to its end and then closes it."""
        if self.log is not None:
            return
        self._reader = threading.Thread(
            target=_pump_to_end, args=(self.process, self._queue), daemon=True
        )
        self._reader.start()

    def read_lines(self, timeout: float = 0.0, *, drain: bool = False) -> list[str]:
        """Collect the stderr lines that arrive until `timeout` or the end of stderr; answer all
        lines so far. With `drain`, stop as soon as the lines that have arrived are taken (once
        there is one)."""
        if self.log is not None:
            return self._follow_log(timeout, drain)
        deadline = time.monotonic() + timeout
        while not self._ended:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                self._ended = True
                break
            self.lines.append(line)
            if drain:
                deadline = time.monotonic()
        return self.lines

    def _follow_log(self, timeout: float, drain: bool) -> list[str]:
        """`read_lines` from the log file: its new whole lines, polled every 50 ms."""
        assert self.log is not None
        deadline = time.monotonic() + timeout
        while True:
            ended = self.process.poll() is not None  # before reading: what it wrote is there
            found = self._read_log()
            if ended or (drain and found) or time.monotonic() >= deadline:
                return self.lines
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def _read_log(self) -> bool:
        assert self.log is not None
        with self.log.open("r", encoding="utf-8", errors="replace") as stream:
            stream.seek(self._log_offset)
            text = stream.read()
            self._log_offset = stream.tell()
        *whole, self._partial = (self._partial + text).split("\n")
        self.lines.extend(whole)
        return bool(whole)

    def interrupt(self, timeout: float) -> int:
        """Send SIGINT (Ctrl-C) unless it has ended, wait for the exit, answer the exit code
        (`subprocess.TimeoutExpired` when it has not ended in `timeout` seconds)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=timeout)

    def stop(self, timeout: float = 10.0, *, rest: float = 1.0) -> int:
        """Ctrl-C; SIGKILL when it has not ended in `timeout` seconds. Read what it still
        wrote (up to `rest` seconds), close its pipes, and answer the exit code."""
        try:
            code = self.interrupt(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.read_lines(timeout=rest)
        self.close_pipes()
        return code

    def kill(self) -> None:
        """SIGKILL, as a crash or a power cut; its pipes closed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.close_pipes()

    def close_pipes(self) -> None:
        """Close the pipes of an ended process, once its stderr's reader is done (so that no
        ResourceWarning fails a test, and the reader never reads a closed pipe)."""
        if self._reader is not None:
            self._reader.join(timeout=5)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()


def start_piped(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdout: int = subprocess.PIPE,
    new_session: bool = False,
    log: Path | None = None,
    file_limit: int | None = None,
) -> subprocess.Popen[str]:
    """Start `argv` with stderr piped in text mode (or written to `log`, stdin then closed)
    and Python's output unbuffered.

    `env` is added to this process's environment; `cwd` is the checkout unless given;
    `new_session` starts it in a session (and process group) of its own, as from a terminal;
    `file_limit` is the largest file in bytes it may write (a full disk: writes past it fail
    with EFBIG, since Python ignores SIGXFSZ).
    """
    stderr: int | IO[str] = subprocess.PIPE if log is None else log.open("w", encoding="utf-8")
    try:
        return subprocess.Popen(
            list(argv),
            stdin=None if log is None else subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            cwd=cwd or ROOT,
            start_new_session=new_session,
            preexec_fn=None if file_limit is None else _file_limit(file_limit),
        )
    finally:
        if not isinstance(stderr, int):
            stderr.close()  # the child has its own copy


def _file_limit(limit: int) -> Callable[[], None]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return cap  # a resource limit must be set in the child, before exec


def _pump_to_end(process: subprocess.Popen[str], sink: queue.Queue[str | None]) -> None:
    """Put each line of the process's stderr in `sink`, then None; close stderr at its end."""
    assert process.stderr is not None
    with process.stderr:
        for line in process.stderr:
            sink.put(line.rstrip("\n"))
    sink.put(None)


# ---------------------------------------------------------------------------------- serve


@dataclass(kw_only=True)
class ServeProcess(Piped):
    """A running `stateous serve`: its base URL, its process, and the stderr lines so far."""

    url: str


class ServeOptions(TypedDict, total=False):
    """How `start_serve`, `launch_serve` and `serve_process` start `stateous serve`."""

    listen: str  # `--listen`; 127.0.0.1:0 (a free port) unless given
    extra: Sequence[str]  # more arguments, e.g. `--replica`
    env: dict[str, str] | None  # added to this process's environment
    cwd: Path | None  # the checkout unless given
    log: Path | None  # stderr to this file instead of a pipe
    new_session: bool  # a session (and process group) of its own
    file_limit: int | None  # the largest file in bytes it may write


def start_serve(
    graph: Path | str, db_url: str, **options: Unpack[ServeOptions]
) -> subprocess.Popen[str]:
    """Start `stateous serve` (stderr piped in text mode, or written to `log`) without waiting."""
    log = options.get("log")
    listen = options.get("listen", "127.0.0.1:0")
    return start_piped(
        serve_command(graph, db_url, listen, *options.get("extra", ())),
        env=options.get("env"),
        cwd=options.get("cwd"),
        stdout=subprocess.PIPE if log is None else subprocess.DEVNULL,
        new_session=options.get("new_session", False),
        log=log,
        file_limit=options.get("file_limit"),
    )


def launch_serve(
    graph: Path | str,
    db_url: str,
    *,
    ready_timeout: float = 30.0,
    **options: Unpack[ServeOptions],
) -> ServeProcess:
    """Start `stateous serve` and answer it once `GET /health` answers 200.

    The base URL is read from the `serving on <url> (Ctrl-C stops)` line, so port 0 works.
    Raises RuntimeError (with its stderr) when it stops or is not ready in `ready_timeout`
    seconds; it is then killed and its pipes closed.
    """
    process = start_serve(graph, db_url, **options)
    served = ServeProcess(url="", process=process, log=options.get("log"))
    return until_ready(served, ready_timeout)


def until_ready(served: ServeProcess, timeout: float = 30.0) -> ServeProcess:
    """Read the stderr of a `serve` just started and answer it, its URL set, once it is ready
    (`wait_serving`); when it is not, kill it, close its pipes and raise RuntimeError."""
    served.start_reading()
    try:
        served.url = wait_serving(served, timeout)
    except BaseException:
        served.kill()
        raise
    return served


@contextmanager
def serve_process(
    graph: Path | str,
    db_url: str,
    *,
    ready_timeout: float = 30.0,
    **options: Unpack[ServeOptions],
) -> Iterator[ServeProcess]:
    """`launch_serve` for the block; at its end the server gets Ctrl-C (SIGINT) and is killed if
    it does not stop in 10 s."""
    served = launch_serve(graph, db_url, ready_timeout=ready_timeout, **options)
    try:
        yield served
    finally:
        served.stop()


def wait_serving(served: Piped, timeout: float) -> str:
    """The base URL of a starting `serve`, once its `serving on` line came and `/health`
    answers; RuntimeError with its stderr when it stopped or `timeout` passed first."""
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        lines = served.read_lines(timeout=0.1, drain=True)
        for line in lines[seen:]:
            if line.startswith("serving on "):
                url = line.removeprefix("serving on ").split(" ")[0]
                wait_health(url, max(5.0, deadline - time.monotonic()))
                return url
        seen = len(lines)
        if served.process.poll() is not None:
            served.read_lines(timeout=1.0)
            raise RuntimeError("stateous serve stopped: " + "\n".join(served.lines))
    raise RuntimeError("stateous serve did not start in time: " + "\n".join(served.lines))


def wait_health(url: str, timeout: float) -> None:
    """Wait until `GET /health` answers 200 (RuntimeError after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(url + "/health", timeout=5.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} does not answer /health")
        time.sleep(0.05)


# ---------------------------------------------------------------------------------- supervise


@dataclass
class Supervise(Piped):
    """A running `stateous supervise`: its process and the stderr lines so far."""

    def read(self, timeout: float = 0.0) -> list[str]:
        """Collect the lines that arrived, waiting up to `timeout` for one."""
        return self.read_lines(timeout, drain=True)

    def wait_for(self, pattern: str, timeout: float = 45.0) -> str:
        """The first log message (after the time and logger) matching `pattern`."""
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            self.read(timeout=0.1)
            for line in self.lines[seen:]:
                message = message_of(line)
                if re.search(pattern, message):
                    return message
            seen = len(self.lines)
            if self.process.poll() is not None:
                self.read(timeout=0.5)
                break
        raise AssertionError(f"no line matches {pattern!r}:\n" + "\n".join(self.lines))

    def messages(self) -> list[str]:
        """Every log message so far, without time and logger."""
        self.read(timeout=0.05)
        return [message_of(line) for line in self.lines]

    def stop(self, timeout: float = 20.0, *, rest: float = 5.0) -> int:
        """Ctrl-C once (SIGKILL after `timeout`), read to the end of its stderr, and answer
        the exit code."""
        return super().stop(timeout, rest=rest)


def message_of(line: str) -> str:
    """The message of a log line of the supervisor (the line as is when it is not one)."""
    found = LOG_LINE.match(line)
    return found.group(1) if found else line


def start_supervise(
    folder: Path,
    *,
    env: dict[str, str] | None = None,
    new_session: bool = False,
    log: Path | None = None,
    fast: bool = True,
    log_level: str | None = "debug",
) -> Supervise:
    """Start `stateous supervise FOLDER` in the folder's parent (in a session of its own with
    `new_session`, as one started from a terminal is), with SUPERVISE_FAST's timings unless
    `fast` is false, and `env` over them. The checkout is on PYTHONPATH. `--log-level` is
    `log_level`: debug unless given, so the tests read the lines of each task (None: the
    command's own default, info)."""
    timings = SUPERVISE_FAST if fast else {}
    level = () if log_level is None else ("--log-level", log_level)
    process = start_piped(
        stateous_argv("supervise", str(folder), *level),
        env={"PYTHONPATH": str(ROOT), **timings, **(env or {})},
        cwd=folder.parent,
        stdout=subprocess.DEVNULL,
        new_session=new_session,
        log=log,
    )
    running = Supervise(process, log=log)
    running.start_reading()
    return running
