"""`stateous console` as a real process on a terminal (a pseudo-terminal): it ends with exit code
1 when it ended on an error, writes the error to its log, and, with no `--url`, watches
`$STATEOUS_URL` (or http://127.0.0.1:8080) as every command does, whatever URL the settings file
of an older console remembers."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.support.ports import free_port

UNREACHABLE_FOR_SURE = "http://127.0.0.1:{port}"


def run_console(
    home: Path, env: dict[str, str], keys: bytes = b"", after: bytes = b"cannot reach"
) -> tuple[int, str]:
    """Run `python -m stateous console` on a 100x30 pseudo-terminal with its user folders in
    `home`; type `keys` once it drew `after`. (exit code, what it wrote to the terminal)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    dropped = ("STATEOUS_URL", "COLUMNS", "LINES", "STATEOUS_DEBUG_POINT")
    full_env = {k: v for k, v in os.environ.items() if k not in dropped}
    full_env |= {"XDG_CONFIG_HOME": str(home / "config"), "XDG_STATE_HOME": str(home / "state")}
    full_env |= {"HOME": str(home), "TERM": "xterm-256color", **env}
    process = subprocess.Popen(
        [sys.executable, "-m", "stateous", "console"],
        stdin=slave, stdout=slave, stderr=slave, env=full_env, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    written = bytearray()
    sent = not keys
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the process closed the terminal
                    break
                if not chunk:
                    break
                written += chunk
            if not sent and after in written:
                time.sleep(0.5)
                os.write(master, keys)
                sent = True
            if process.poll() is not None and not ready:
                break
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    return code, written.decode("utf-8", "replace")


def log_path(home: Path) -> Path:
    """Where platformdirs puts the console's log under `XDG_STATE_HOME` (Linux)."""
    return home / "state" / "stateous" / "log" / "console.log"


def test_a_console_that_ends_on_an_error_exits_1_and_logs_it(tmp_path: Path) -> None:
    url = UNREACHABLE_FOR_SURE.format(port=free_port())
    env = {"STATEOUS_URL": url, "STATEOUS_DEBUG_POINT": "console_start"}
    code, screen = run_console(tmp_path, env)
    assert code == 1, screen
    assert "CrashPoint" in screen  # Textual's traceback, printed as it ends
    log = log_path(tmp_path).read_text(encoding="utf-8")
    assert (
        " ERROR the console ended on an error: CrashPoint: the crash point console_start is "
        "armed (STATEOUS_DEBUG_POINT)\nTraceback (most recent call last):"
    ) in log


def test_a_console_that_quits_exits_0_and_ignores_a_remembered_url(tmp_path: Path) -> None:
    settings = tmp_path / "config" / "stateous" / "console.yaml"
    settings.parent.mkdir(parents=True)
    settings.write_text("url: http://remembered.invalid:1\nsupervisors: []\n", encoding="utf-8")
    # No --url, no STATEOUS_URL: the default of every command (reachable or not here).
    code, screen = run_console(tmp_path, {}, keys=b"q", after=b"http://127.0.0.1:8080")
    assert code == 0, screen
    assert "remembered.invalid" not in screen
    assert "url" not in settings.read_text(encoding="utf-8")
