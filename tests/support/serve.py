"""`stateous serve` as a real process, for integration tests of every side."""

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
class ServeProcess:
    """A running `stateous serve`: its base URL, its process, and the stderr lines so far."""

    url: str
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def read_lines(self, timeout: float = 0.0) -> list[str]:
        """Collect the stderr lines that arrived (waiting up to `timeout` for the first one)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return self.lines
            if line is None:
                return self.lines
            self.lines.append(line)

    def stop(self, timeout: float = 10.0) -> int:
        """Send SIGINT (Ctrl-C), wait for the exit, and answer the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=timeout)
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
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.Popen(
        serve_command(graph, db_url, listen, *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full_env,
        cwd=cwd or ROOT,
    )


def _pump(stream: object, sink: queue.Queue[str | None]) -> None:
    for line in stream:  # type: ignore[attr-defined]  # a text pipe
        sink.put(line.rstrip("\n"))
    sink.put(None)


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
    pump = threading.Thread(target=_pump, args=(process.stderr, served._queue), daemon=True)
    pump.start()
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
