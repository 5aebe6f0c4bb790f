"""Named crash points: a real process dies at the armed one, and only there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from stateous.supervisor.debug_points import debug_point

PROGRAM = """
from stateous.supervisor.debug_points import debug_point
debug_point("after_outbox_commit:report")
print("passed report", flush=True)
debug_point("after_outbox_commit:note")
print("passed note", flush=True)
"""


def run(armed: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "STATEOUS_DEBUG_POINT"}
    if armed is not None:
        env["STATEOUS_DEBUG_POINT"] = armed
    return subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, timeout=60
    )


def test_the_armed_point_kills_the_process_there() -> None:
    done = run("after_outbox_commit:note")
    assert (done.returncode, done.stdout) == (-signal.SIGKILL, "passed report\n")


def test_unarmed_points_do_nothing() -> None:
    done = run(None)
    assert (done.returncode, done.stdout) == (0, "passed report\npassed note\n")


def test_a_point_of_another_name_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATEOUS_DEBUG_POINT", "after_outbox_commit:memory")
    debug_point("after_outbox_commit:note")  # this test's process lives on
