"""`stateous supervise` as a real process, and helpers to build supervisor folders for tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support import serve_process
from tests.support.serve import Piped, start_piped

ROOT = Path(__file__).resolve().parents[3]
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
        self.read(timeout=0.5)
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


def start_supervise(folder: Path, *, env: dict[str, str] | None = None) -> Supervise:
    """Start `stateous supervise FOLDER` with the short timings of tests."""
    process = start_piped(
        [sys.executable, "-m", "stateous", "supervise", str(folder)],
        env={"PYTHONPATH": str(ROOT), **FAST, **(env or {})},
        cwd=folder.parent,
        stdout=subprocess.DEVNULL,
    )
    running = Supervise(process)
    running.start_reading()
    return running


def init_folder(source: str, folder: Path) -> None:
    """`stateous init supervisor SOURCE FOLDER`, then remove the stubs."""
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
    import json

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
