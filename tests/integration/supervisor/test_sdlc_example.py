"""examples/sdlc-supervisor against a real `stateous serve`: the PHD `coding` routine (with a fake
`phd` module on the import path) and the `testing` routine, which runs pytest in the checkout."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.supervisor.procs import history, wait_until
from tests.support import ROOT, ServeProcess, Supervise, serve_process, sqlite_url, start_supervise

FAKE_PHD = Path(__file__).parent / "fake_phd"


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[ServeProcess]:
    with serve_process(
        ROOT / "examples" / "sdlc" / "build" / "sdlc.json", sqlite_url(tmp_path)
    ) as served:
        yield served


def folder_of(tmp_path: Path, url: str, *, coding: bool = True) -> Path:
    folder = tmp_path / "sdlc-supervisor"
    folder.mkdir()
    names = ["contract.py", "testing.py", *(["coding.py"] if coding else [])]
    for name in names:
        shutil.copy(ROOT / "examples" / "sdlc-supervisor" / name, folder / name)
    (folder / "stateous.yaml").write_text(f"url: {url}\nname: build-box-1\n", encoding="utf-8")
    return folder


def repo(tmp_path: Path, name: str, test: str) -> None:
    (tmp_path / name).mkdir()
    (tmp_path / name / "test_it.py").write_text(test, encoding="utf-8")


def supervise(folder: Path, **env: str) -> Supervise:
    # The pytest of the checkout needs none of this environment's plugins (Textual is slow to load).
    env = {"PYTHONPATH": f"{ROOT}:{FAKE_PHD}", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **env}
    return start_supervise(folder, env=env)


def begin(url: str, token: str, checkout: str) -> None:
    answer = httpx.post(
        f"{url}/tokens", json={"token": token, "context": {"repo": checkout}}, timeout=10
    )
    assert answer.status_code == 201, answer.text


def status(url: str, token: str) -> str:
    return str(httpx.get(f"{url}/tokens/{token}", timeout=10).json()["status"])


def test_the_agent_codes_and_pytest_passes(plane: ServeProcess, tmp_path: Path) -> None:
    repo(
        tmp_path,
        "repo",
        "def test_ok() -> None:\n    assert True\n\n\ndef test_two() -> None:\n    pass\n",
    )
    folder = folder_of(tmp_path, plane.url)
    running = supervise(folder)
    try:
        assert running.wait_for("serves").startswith("build-box-1 serves coding, testing;")
        begin(plane.url, "TICKET-1", "repo")
        wait_until(
            lambda: status(plane.url, "TICKET-1") == "completed", timeout=60, what="TICKET-1"
        )
    finally:
        assert running.stop() == 0
    lines = history(plane.url, "TICKET-1")
    assert 'note {"task": 1, "text": "reading the code"}' in lines
    assert 'memory_set {"state": "coding", "memory_key": "dev"}' in lines
    assert 'note {"task": 1, "text": "the tests pass"}' in lines
    assert 'event_accepted {"event": "done", "payload": null, "state": "coding"}' in lines
    assert (
        'event_accepted {"event": "passed", "payload": {"passed": 2, "failed": 0}, "state": "testing"}'
        in lines
    )
    assert "task 2 of TICKET-1: reported passed" in running.messages()


def test_failing_tests_and_a_missing_checkout(plane: ServeProcess, tmp_path: Path) -> None:
    repo(
        tmp_path,
        "broken",
        "def test_bad() -> None:\n    assert False\n\n\ndef test_ok() -> None:\n    pass\n",
    )
    folder = folder_of(tmp_path, plane.url, coding=False)
    running = supervise(folder)
    try:
        running.wait_for("serves coding|serves testing")
        begin(plane.url, "TICKET-2", "broken")
        begin(plane.url, "TICKET-3", "nowhere")
        for token in ("TICKET-2", "TICKET-3"):
            assert (
                httpx.post(f"{plane.url}/tokens/{token}/events/done", timeout=10).status_code == 200
            )
        wait_until(lambda: status(plane.url, "TICKET-3") == "failed", timeout=60, what="TICKET-3")
        wait_until(
            lambda: any(
                line.startswith('event_accepted {"event": "failed"')
                for line in history(plane.url, "TICKET-2")
            ),
            timeout=60,
            what="TICKET-2's failed",
        )
    finally:
        assert running.stop() == 0
    assert (
        'event_accepted {"event": "failed", "payload": {"passed": 1, "failed": 1}, "state": "testing"}'
        in history(plane.url, "TICKET-2")
    )
    missing = [line for line in history(plane.url, "TICKET-3") if line.startswith("task_failed")]
    assert missing == [
        f'task_failed {{"task": {missing[0].split(": ")[1].split(",")[0]}, "error": '
        f'"FileNotFoundError: no checkout at {tmp_path / "nowhere"}"}}'
    ]


def test_a_session_that_cannot_resume_is_forgotten(plane: ServeProcess, tmp_path: Path) -> None:
    repo(tmp_path, "repo", "def test_ok() -> None:\n    pass\n")
    folder = folder_of(tmp_path, plane.url)
    running = supervise(folder, FAKE_PHD_FAIL="session")
    try:
        running.wait_for("serves")
        begin(plane.url, "TICKET-4", "repo")
        wait_until(lambda: status(plane.url, "TICKET-4") == "failed", timeout=60, what="TICKET-4")
    finally:
        assert running.stop() == 0
    lines = history(plane.url, "TICKET-4")
    assert lines.count('memory_deleted {"state": "coding", "memory_key": "dev"}') == 3
    failures = [line for line in lines if line.startswith("task_failed")]
    assert len(failures) == 3
    assert all(
        line.endswith('"error": "RuntimeError: the agent did not finish: session"}')
        for line in failures
    )
