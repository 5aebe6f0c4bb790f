"""`stateous serve` as a real process, for integration tests of every side.

`Piped` and `start_piped` serve any `stateous` child whose stderr a test reads (the supervisor's
helpers in tests/integration/supervisor/procs.py build on them too).
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Piped:
    """A child process and the lines of its stderr so far, which a thread reads into a queue."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def start_reading(self) -> threading.Thread:
        """Start the thread that reads stderr to its end and then closes it; answer the thread."""
        reader = threading.Thread(
            target=_pump_to_end, args=(self.process, self._queue), daemon=True
        )
        reader.start()
        return reader

    def read_lines(self, timeout: float = 0.0, *, drain: bool = False) -> list[str]:
        """Collect the stderr lines that arrive until `timeout` or the end of the pipe.

        With `drain`, stop as soon as the lines that have arrived are taken (once there is one).
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return self.lines
            if line is None:
                return self.lines
            self.lines.append(line)
            if drain:
                deadline = time.monotonic()

    def interrupt(self, timeout: float) -> int:
        """Send SIGINT (Ctrl-C) unless it has ended, wait for the exit, answer the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=timeout)


@dataclass(kw_only=True)
class ServeProcess(Piped):
    """A running `stateous serve`: its base URL, its process, and the stderr lines so far."""

    url: str

    def stop(self, timeout: float = 10.0) -> int:
        """Send SIGINT (Ctrl-C), wait for the exit, and answer the exit code."""
        code = self.interrupt(timeout)
        self.read_lines(timeout=1.0)
        return code


def serve_command(graph: Path | str, db_url: str, listen: str, *extra: str) -> list[str]:
    """The argv of `stateous serve` with this checkout's Python."""
    return [
        sys.executable,
        "-m",
        "stateous",
        "serve",
        str(graph),
        "--db",
        db_url,
        "--listen",
        listen,
        *extra,
    ]


def start_serve(
    graph: Path | str,
    db_url: str,
    *,
    listen: str = "127.0.0.1:0",
    extra: Sequence[str] = (),
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[str]:
    """Start `stateous serve` (stderr piped, text mode) without waiting."""
    return start_piped(serve_command(graph, db_url, listen, *extra), env=env, cwd=cwd)


def start_piped(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdout: int = subprocess.PIPE,
    new_session: bool = False,
) -> subprocess.Popen[str]:
    """Start `argv` with stderr piped in text mode and Python's output unbuffered.

    `env` is added to this process's environment; `cwd` is the checkout unless given;
    `new_session` starts it in a session (and process group) of its own, as from a terminal.
    """
    return subprocess.Popen(
        list(argv),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        cwd=cwd or ROOT,
        start_new_session=new_session,
    )


def _pump(stream: object, sink: queue.Queue[str | None]) -> None:
    for line in stream:  # type: ignore[attr-defined]  # a text pipe
        sink.put(line.rstrip("\n"))
    sink.put(None)


def _pump_to_end(process: subprocess.Popen[str], sink: queue.Queue[str | None]) -> None:
    """`_pump` of the process's stderr, then close it (no ResourceWarning once it has ended)."""
    assert process.stderr is not None
    with process.stderr:
        _pump(process.stderr, sink)


@contextmanager
def serve_process(
    graph: Path | str,
    db_url: str,
    *,
    listen: str = "127.0.0.1:0",
    extra: Sequence[str] = (),
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    ready_timeout: float = 30.0,
) -> Iterator[ServeProcess]:
    """Run `stateous serve GRAPH --db URL` until the block ends; yields it once it answers.

    The base URL is read from the `serving on <url> (Ctrl-C stops)` line, so port 0 works.
    At the end the server gets Ctrl-C (SIGINT) and is killed if it does not stop in 10 s.
    """
    process = start_serve(graph, db_url, listen=listen, extra=extra, env=env, cwd=cwd)
    served = ServeProcess(url="", process=process)
    pump = served.start_reading()
    try:
        served.url = _wait_ready(served, ready_timeout)
        yield served
    finally:
        try:
            if process.poll() is None:
                served.stop()
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        _close_pipes(process, pump)


def _close_pipes(process: subprocess.Popen[str], pump: threading.Thread) -> None:
    """Close the pipes of an ended process (so no ResourceWarning fails a test)."""
    pump.join(timeout=5)
    for pipe in (process.stdout, process.stderr):
        if pipe is not None and not pipe.closed:
            pipe.close()


def _wait_ready(served: ServeProcess, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in served.read_lines(timeout=0.1):
            if line.startswith("serving on "):
                url = line.removeprefix("serving on ").split(" ")[0]
                httpx.get(url + "/health", timeout=5.0).raise_for_status()
                return url
        if served.process.poll() is not None:
            served.read_lines(timeout=1.0)
            raise RuntimeError("stateous serve stopped: " + "\n".join(served.lines))
    raise RuntimeError("stateous serve did not start in time: " + "\n".join(served.lines))
