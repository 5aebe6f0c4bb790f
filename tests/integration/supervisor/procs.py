"""Helpers of the supervisor tests: supervisor folders (one routine, or one that blocks), the sdlc
control plane on SQLite, a supervisor run in the test's own process, and a network that loses one
answer. The processes themselves start through tests/support/processes.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from stateous.supervisor.loop import Timings
from tests.support import ROOT, ServeProcess, serve_process, sqlite_url

#: The sdlc graph of the supervisor's unit tests (state `coding` emits `done` or `stuck`).
DATA = ROOT / "tests" / "unit" / "supervisor" / "data"
#: The timings of a supervisor run inside a test (`Supervisor(..., timings=IN_TEST)`).
IN_TEST = Timings(heartbeat=0.5, idle=0.1, max_retry=0.2, wait=1.0)
#: A `coding` that waits until the file `release` exists beside the folder, so a task stays
#: running until the test says.
BLOCKING_ROUTINE = """
import time
from pathlib import Path

from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
def coding(ctx: TicketContext) -> events.done | events.stuck:
    while not Path("release").exists():
        time.sleep(0.05)
    return events.stuck()
"""


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


@contextmanager
def sdlc_plane(folder: Path) -> Iterator[ServeProcess]:
    """`stateous serve` of DATA's sdlc graph (copied into `folder`) on a new SQLite file there."""
    graph = folder / "sdlc.json"
    shutil.copy(DATA / "sdlc.json", graph)
    with serve_process(graph, sqlite_url(folder)) as served:
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
