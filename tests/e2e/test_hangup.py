"""A closed terminal (SIGHUP) and `kill` (SIGTERM) leave nothing behind, as quitting does.

Each command runs as a real process in a session of its own. `demo --console` runs on a
pseudo-terminal that is its controlling terminal, and the test closes that terminal, as a user
closing the window does; otherwise the signal goes to the command's whole process group. Then no
process the command started may survive, and the demo's temporary folder must be gone.
"""

from __future__ import annotations

import fcntl
import os
import queue
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from stateous.cli.demo import prepare
from tests.support import free_port, sqlite_url

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads the process table in /proc"
)

WAIT = 120.0
FOLDER = re.compile(r"demo: writing the orders workflow and its supervisor in (\S+)")

# Makes the pseudo-terminal on fd 0 the controlling terminal of a new session, then runs the
# command: what a terminal emulator does for the shell it starts.
ON_A_TERMINAL = (
    "import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


# ---------------------------------------------------------------- the process table


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent, process group) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2])


def _table() -> dict[int, tuple[str, int, int]]:
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            table[int(entry.name)] = stat
    return table


def descendants(root: int) -> set[int]:
    """Every living process below `root` (children, their children, ...)."""
    table = _table()
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, (_, ppid, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return {pid for pid in found if table[pid][0] != "Z"}


def alive(pids: set[int]) -> set[int]:
    """The processes of `pids` that still run (a zombie has ended)."""
    return {pid for pid in pids if (stat := _stat(pid)) is not None and stat[0] != "Z"}


def in_group(pgid: int) -> set[int]:
    return {pid for pid, (state, _, group) in _table().items() if group == pgid and state != "Z"}


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def until(test: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# ---------------------------------------------------------------- a command and its output


@dataclass
class Command:
    """A `stateous` process leading its own session, and what it wrote so far."""

    process: subprocess.Popen[bytes]
    terminal: int | None = None  # the pseudo-terminal's master side, when on a terminal
    text: str = ""
    seen: set[int] = field(default_factory=set)  # every process below it found so far
    _chunks: queue.Queue[str] = field(default_factory=queue.Queue)

    def children(self) -> set[int]:
        """The processes below this one now (remembered, to clean up after a failed test)."""
        found = descendants(self.process.pid)
        self.seen |= found
        return found

    def output(self) -> str:
        while not self._chunks.empty():
            self.text += self._chunks.get()
        return self.text

    def wait_for(self, pattern: str) -> re.Match[str]:
        found: list[re.Match[str]] = []

        def seen() -> bool:
            match = re.search(pattern, self.output())
            if match is not None:
                found.append(match)
            return match is not None or self.process.poll() is not None

        until(seen, repr(pattern))
        assert found, (self.process.returncode, self.output())
        return found[0]

    def pump(self, read: Callable[[], bytes]) -> None:
        def run() -> None:
            while True:
                try:
                    chunk = read()
                except OSError:  # EIO: the terminal closed
                    return
                if not chunk:
                    return
                self._chunks.put(chunk.decode(errors="replace"))

        threading.Thread(target=run, daemon=True).start()


def _env(tmp: Path) -> dict[str, str]:
    (tmp / "tmp").mkdir()
    return {
        **os.environ,
        "TMPDIR": str(tmp / "tmp"),  # the demo's temporary folder goes here
        "XDG_CONFIG_HOME": str(tmp / "config"),  # the console's settings file
        "NO_COLOR": "1",
        "PYTHONUNBUFFERED": "1",
        "TERM": "xterm-256color",
    }


@contextmanager
def in_a_session(argv: list[str], tmp: Path, cwd: Path | None = None) -> Iterator[Command]:
    """`argv` in a new session with its stderr piped (stdout and stdin: nothing)."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(tmp),
        cwd=cwd,
        start_new_session=True,
    )
    command = Command(process)
    assert process.stderr is not None
    command.pump(lambda: process.stderr.read1(65536))  # type: ignore[union-attr]
    try:
        yield command
    finally:
        _reap(command)
        process.stderr.close()


@contextmanager
def on_a_terminal(argv: list[str], tmp: Path) -> Iterator[Command]:
    """`argv` in a new session whose controlling terminal is a fresh pseudo-terminal."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-c", ON_A_TERMINAL, *argv],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=_env(tmp),
    )
    os.close(slave)
    command = Command(process, terminal=master)
    command.pump(lambda: os.read(master, 65536))
    try:
        yield command
    finally:
        _reap(command)
        if command.terminal is not None:
            os.close(command.terminal)


def _reap(command: Command) -> None:
    """After a failed test: leave no process of it behind either."""
    if command.process.poll() is None:
        command.children()
        command.process.kill()
    command.process.wait()
    for pid in alive(command.seen):
        os.kill(pid, signal.SIGKILL)


def hang_up(command: Command) -> None:
    """Close the terminal: the kernel sends SIGHUP to the session's foreground processes."""
    assert command.terminal is not None
    os.close(command.terminal)
    command.terminal = None


# ---------------------------------------------------------------- demo


def _demo(*args: str) -> list[str]:
    return [sys.executable, "-m", "stateous", "demo", *args]


def _check_demo_cleaned_up(
    command: Command, folder: Path, children: set[int], signum: int, tmp: Path
) -> None:
    assert command.process.wait(WAIT) == 128 + signum, command.output()
    assert alive(children) == set(), [cmdline(pid) for pid in alive(children)]
    assert not folder.exists()
    assert list((tmp / "tmp").iterdir()) == []
    assert "Traceback" not in command.output()


def _server_and_console(demo: Command) -> set[int]:
    """The demo's `serve` and `console` children, once both run."""
    found: set[int] = set()

    def both() -> bool:
        found.clear()
        found.update(demo.children())
        names = " ".join(cmdline(pid) for pid in found)
        return "stateous serve" in names and "stateous console" in names

    until(both, "the demo's server and console")
    return found


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_stops_the_demo_and_cleans_up(tmp_path: Path, signum: signal.Signals) -> None:
    with in_a_session(_demo(), tmp_path) as demo:
        folder = Path(demo.wait_for(FOLDER.pattern).group(1))
        demo.wait_for(r"demo: the control plane serves on ")
        # Hold the demo where it is (between starting the server and printing the histories),
        # so that the signal cannot arrive after it ended on its own.
        os.killpg(demo.process.pid, signal.SIGSTOP)
        children = demo.children()
        assert any("stateous serve" in cmdline(pid) for pid in children)
        assert folder.is_dir()
        os.killpg(demo.process.pid, signum)
        os.killpg(demo.process.pid, signal.SIGCONT)
        _check_demo_cleaned_up(demo, folder, children, signum, tmp_path)
        assert in_group(demo.process.pid) == set()


def test_closing_the_terminal_of_demo_console_cleans_up(tmp_path: Path) -> None:
    with on_a_terminal(_demo("--console"), tmp_path) as demo:
        folder = Path(demo.wait_for(FOLDER.pattern).group(1))
        demo.wait_for(r"demo: the console is open on the demo")
        children = _server_and_console(demo)
        hang_up(demo)
        _check_demo_cleaned_up(demo, folder, children, signal.SIGHUP, tmp_path)


def test_sigterm_to_demo_console_cleans_up(tmp_path: Path) -> None:
    with on_a_terminal(_demo("--console"), tmp_path) as demo:
        folder = Path(demo.wait_for(FOLDER.pattern).group(1))
        demo.wait_for(r"demo: the console is open on the demo")
        children = _server_and_console(demo)
        os.kill(demo.process.pid, signal.SIGTERM)  # the demo only: it ends the console itself
        _check_demo_cleaned_up(demo, folder, children, signal.SIGTERM, tmp_path)


# ---------------------------------------------------------------- serve --supervise


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_stops_serve_supervise_gracefully(tmp_path: Path, signum: signal.Signals) -> None:
    work = tmp_path / "work"
    work.mkdir()
    supervisor = prepare(work)
    argv = [
        sys.executable, "-m", "stateous", "serve", "orders/build/orders.json",
        "--db", sqlite_url(work), "--listen", f"127.0.0.1:{free_port()}",
        "--supervise", str(supervisor),
    ]  # fmt: skip
    with in_a_session(argv, tmp_path, cwd=work) as serve:
        serve.wait_for(r"serving on http://")
        serve.wait_for(r" serves .*; the control plane is ")  # the supervisor has started
        pgid = serve.process.pid
        children = serve.children()
        os.killpg(pgid, signum)
        assert serve.process.wait(WAIT) == 0, serve.output()
        assert serve.output().splitlines()[-1] == "stopped"
        assert alive(children) == set()
        assert in_group(pgid) == set()
        assert "Traceback" not in serve.output()
