"""`stateous supervise` as a real process, and helpers to build supervisor folders for tests:
the sdlc control plane on SQLite, a folder with one routine, a supervisor run in the test's own
process, and a network that loses one answer."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from stateous.supervisor.loop import Timings
from tests.support import ServeProcess, serve_process, sqlite_url
from tests.support.serve import Piped, start_piped

ROOT = Path(__file__).resolve().parents[3]
#: The sdlc graph of the supervisor's unit tests (state `coding` emits `done` or `stuck`).
DATA = ROOT / "tests" / "unit" / "supervisor" / "data"
#: The timings of a supervisor run inside a test (`Supervisor(..., timings=IN_TEST)`).
IN_TEST = Timings(heartbeat=0.5, idle=0.1, max_retry=0.2, wait=1.0)
FAST = {
    "STATEOUS_SUPERVISOR_HEARTBEAT": "0.5",
    "STATEOUS_SUPERVISOR_IDLE": "0.2",
    "STATEOUS_SUPERVISOR_MAX_RETRY": "0.5",
    "STATEOUS_SUPERVISOR_WAIT": "1",
}


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

    def stop(self, timeout: float = 20.0) -> int:
        """Ctrl-C once and wait for the exit code."""
        code = self.interrupt(timeout)
        self.read_lines(timeout=5.0)  # to the end of the pipe: every line it wrote
        return code

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        self.process.kill()
        self.process.wait()
        self.read(timeout=0.5)


LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} stateous\.supervisor: (.*)$")


def message_of(line: str) -> str:
    """The message of a log line of the supervisor (the line as is when it is not one)."""
    found = LOG_LINE.match(line)
    return found.group(1) if found else line


def start_supervise(
    folder: Path, *, env: dict[str, str] | None = None, new_session: bool = False
) -> Supervise:
    """Start `stateous supervise FOLDER` with the short timings of tests (in a session of its
    own with `new_session`, as one started from a terminal is)."""
    process = start_piped(
        [sys.executable, "-m", "stateous", "supervise", str(folder)],
        env={"PYTHONPATH": str(ROOT), **FAST, **(env or {})},
        cwd=folder.parent,
        stdout=subprocess.DEVNULL,
        new_session=new_session,
    )
    running = Supervise(process)
    running.start_reading()
    return running


#: A folder that `init supervisor` wrote in this process, by the graph it was written from.
_inits: dict[str, Path] = {}


def init_folder(source: str, folder: Path, *, again: bool = False) -> None:
    """`stateous init supervisor SOURCE FOLDER`, then remove the stubs.

    With `again`, when this process ran init for the same graph before (read from the control
    plane's `GET /workflow`), its folder is copied instead: the contract and pyproject.toml are
    the same, and stateous.yaml names the first control plane's URL (the caller writes its own).
    """
    if not again:
        _init(source, folder)
        return
    graph = httpx.get(source.rstrip("/") + "/workflow", timeout=10).text
    first = _inits.get(graph)
    if first is None:
        _init(source, folder)
        _inits[graph] = folder
        return
    shutil.copytree(first, folder, ignore=shutil.ignore_patterns(".stateous", "__pycache__"))
    for extra in folder.iterdir():  # the routines the first caller wrote
        if extra.suffix == ".py" and extra.name != "contract.py":
            extra.unlink()


def _init(source: str, folder: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "init", "supervisor", source, str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for stub in folder.glob("*.py"):
        if stub.name != "contract.py":
            stub.unlink()


def history(url: str, token: str) -> list[str]:
    """`kind data` of each history entry of a token."""
    entries = httpx.get(f"{url}/tokens/{token}/history", timeout=10).json()
    return [f"{e['kind']} {_compact(e['data'])}" for e in entries]


def _compact(data: object) -> str:
    return json.dumps(data, separators=(", ", ": "))


def wait_until(check: object, timeout: float = 45.0, what: str = "") -> None:
    """Poll `check()` until it is true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or check}")


serving = serve_process
"""`serve_process` of tests/support/serve.py, which stops the server and closes its pipes."""


@contextmanager
def sdlc_plane(folder: Path) -> Iterator[ServeProcess]:
    """`stateous serve` of DATA's sdlc graph (copied into `folder`) on a new SQLite file there."""
    graph = folder / "sdlc.json"
    shutil.copy(DATA / "sdlc.json", graph)
    with serving(graph, sqlite_url(folder)) as served:
        yield served


def routine_folder(parent: Path, url: str, name: str, routine: str, yaml: str) -> Path:
    """`parent/name`: a supervisor folder for `url` whose `coding.py` is `routine` and whose
    stateous.yaml is `url: URL` and then `yaml`."""
    folder = parent / name
    init_folder(url, folder, again=True)
    (folder / "coding.py").write_text(routine, encoding="utf-8")
    (folder / "stateous.yaml").write_text(f"url: {url}\n{yaml}", encoding="utf-8")
    return folder


@contextmanager
def imports_undone(folder: Path) -> Iterator[Path]:
    """Yield `folder`; then forget the modules imported meanwhile (its routines and contract, as
    a supervisor run in this process imports them) and take the folder off sys.path."""
    before = set(sys.modules)
    try:
        yield folder
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]
        if str(folder.resolve()) in sys.path:  # put there when the routines were imported
            sys.path.remove(str(folder.resolve()))


def entries(url: str) -> list[dict[str, Any]]:
    """`GET /supervisors`."""
    answer = httpx.get(f"{url}/supervisors", timeout=10)
    assert answer.status_code == 200
    found: list[dict[str, Any]] = answer.json()
    return found


class LoseFirst(httpx.AsyncBaseTransport):
    """Forwards every request; the first answer to `path` that is a 200 is lost on the way
    back (the control plane did apply the request)."""

    def __init__(self, path: str) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.path = path
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.lost = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        body = json.loads(request.content) if request.content else {}
        self.sent.append((request.url.path, body))
        if request.url.path == self.path:
            await response.aread()
            if response.status_code == 200 and not self.lost:
                self.lost = True
                raise httpx.ReadTimeout("the answer was lost", request=request)
        return response

    def bodies(self, path: str) -> list[dict[str, Any]]:
        """The bodies sent to `path`, in order."""
        return [body for sent, body in self.sent if sent == path]

    async def aclose(self) -> None:
        await self.inner.aclose()
