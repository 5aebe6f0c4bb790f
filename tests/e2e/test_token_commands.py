"""`stateous token …` as real processes against a real `stateous serve`.

The workflow is `sdlc`: `coding` (timeout 6h, retries 2) and `testing` (timeout
1h). No supervisor runs; where a scenario needs one, the test claims and reports over HTTP as
the supervisor `build-box-1` would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.support import ServeProcess, free_port, serve_process, sqlite_url
from tests.support.graphs import SDLC, write_graph

TIME = re.compile(r"^\d\d:\d\d:\d\d  ")
DUE = re.compile(r"at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)$")


@contextmanager
def serving(folder: Path) -> Iterator[ServeProcess]:
    """`stateous serve` of `sdlc` on a fresh SQLite file in `folder`."""
    graph = write_graph(folder, SDLC)
    with serve_process(graph, sqlite_url(folder), cwd=folder) as served:
        try:
            yield served
        finally:
            # The helper leaves the child's pipes to the garbage collector, which warns.
            served.stop()
            for pipe in (served.process.stdout, served.process.stderr):
                if pipe is not None:
                    pipe.close()


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One control plane shared by the tests that do not count task ids."""
    with serving(tmp_path_factory.mktemp("sdlc")) as served:
        yield served


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[ServeProcess]:
    """A control plane on an empty database, so task ids start at 1 as in the docs' examples."""
    with serving(tmp_path) as served:
        yield served


def stateous(
    *args: str, url: str | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run `python -m stateous ARGS` (with `--url URL` when given): (exit code, stdout, stderr)."""
    argv = [sys.executable, "-m", "stateous", *args, *(["--url", url] if url else [])]
    # COLUMNS and LINES may be left in the environment by a console test of the same worker;
    # a command's output in a pipe must not depend on them.
    dropped = ("STATEOUS_URL", "COLUMNS", "LINES")
    full_env = {k: v for k, v in os.environ.items() if k not in dropped}
    done = subprocess.run(
        argv, capture_output=True, text=True, env={**full_env, **(env or {})}, timeout=60
    )
    return done.returncode, done.stdout, done.stderr


def ok(*args: str, url: str) -> list[str]:
    """The stdout lines of a command that must succeed with nothing on stderr."""
    code, out, err = stateous(*args, url=url)
    assert (code, err) == (0, ""), (args, code, err)
    return out.splitlines()


def history(lines: list[str]) -> list[str]:
    """History lines with their local time checked and cut off, so the rest compares exactly."""
    assert all(TIME.match(line) for line in lines), lines
    return [line[10:] for line in lines]


def as_local(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S")


def claim_and_report(url: str, state: str, event: str, payload: dict[str, int]) -> None:
    """Do what a supervisor named build-box-1 does: claim a task of `state`, report `event`."""
    grant = httpx.post(f"{url}/tasks/claim", json={"supervisor": "build-box-1", "states": [state]})
    assert grant.status_code == 200, grant.text
    task = grant.json()
    answer = httpx.post(
        f"{url}/tasks/{task['task']}/report",
        json={
            "kind": "event",
            "event": event,
            "payload": payload,
            "attempt": task["attempt"],
            "supervisor": "build-box-1",
        },
    )
    assert answer.status_code == 200, answer.text


def test_an_empty_listing_and_a_missing_token(cp: ServeProcess) -> None:
    assert stateous("token", "show", url=cp.url) == (0, "no tokens\n", "")
    assert stateous("token", "show", "NOPE", url=cp.url) == (
        1,
        "",
        f"error: the control plane at {cp.url} refused (404): there is no token 'NOPE'\n",
    )


def test_duplicate_delivery_and_show_after_an_outside_done(fresh: ServeProcess) -> None:
    url = fresh.url
    assert ok("token", "start", "TICKET-1", '{"repo": "acme/api"}', url=url) == [
        "TICKET-1: coding, active"
    ]
    assert ok("token", "start", "TICKET-1", '{"other": 1}', url=url) == ["TICKET-1: coding, active"]
    # B1: the same key fires once.
    assert ok("token", "fire", "TICKET-1", "done", "--key", "gh-delivery-1", url=url) == [
        "TICKET-1: testing, active"
    ]
    assert ok("token", "fire", "TICKET-1", "done", "--key", "gh-delivery-1", url=url) == [
        "duplicate: TICKET-1: testing, active"
    ]
    claim_and_report(url, "testing", "passed", {"passed": 1, "failed": 0})
    lines = ok("token", "show", "TICKET-1", url=url)
    assert lines[0] == "TICKET-1: testing, completed"
    body = history(lines[1:])
    assert body[:4] + body[5:9] + body[10:] == [
        "#1  started",
        "#2  __started__ in START",
        "#3  entered coding",
        "#4  task 1 queued for coding",
        "#6  done in coding",
        "#7  task 1 cancelled",
        "#8  entered testing",
        "#9  task 2 queued for testing",
        "#11  build-box-1 took task 2 (attempt 1)",
        '#12  passed in testing: {"passed": 1, "failed": 0}',
        "#13  task 2 done",
        "#14  completed",
    ]
    # B3: each timeout is due 6 h (coding) and 1 h (testing) after its line's own time.
    coding_due, testing_due = (DUE.search(body[i]) for i in (4, 9))
    assert coding_due is not None and body[4].startswith("#5  timer set: timeout at ")
    assert testing_due is not None and body[9].startswith("#10  timer set: timeout at ")
    start = as_local(coding_due[1]) - timedelta(hours=6)
    assert lines[5][:8] == start.strftime("%H:%M:%S")
    testing_start = as_local(testing_due[1]) - timedelta(hours=1)
    assert lines[10][:8] == testing_start.strftime("%H:%M:%S")
    assert ok("token", "fire", "TICKET-1", "done", "--key", "gh-delivery-1", url=url) == [
        "duplicate: TICKET-1: testing, completed"
    ]


def test_pause_fire_resume_cancel_fire(fresh: ServeProcess) -> None:
    url = fresh.url
    assert ok("token", "start", "TICKET-3", '{"repo": "acme/api"}', url=url) == [
        "TICKET-3: coding, active"
    ]
    assert ok("token", "pause", "TICKET-3", url=url) == ["TICKET-3: coding, paused"]
    assert ok("token", "fire", "TICKET-3", "done", url=url) == ["TICKET-3: coding, paused"]
    assert ok("token", "resume", "TICKET-3", url=url) == ["TICKET-3: testing, active"]
    assert ok("token", "cancel", "TICKET-3", url=url) == ["TICKET-3: testing, cancelled"]
    refused = "token 'TICKET-3' is cancelled; it takes no events"
    assert stateous("token", "fire", "TICKET-3", "done", url=url) == (
        1,
        "",
        f"error: the control plane at {url} refused (409): {refused}\n",
    )
    lines = ok("token", "show", "TICKET-3", url=url)
    assert lines[0] == "TICKET-3: testing, cancelled"
    body = history(lines[1:])
    assert body[4].startswith("#5  timer set: timeout at ")
    assert body[13].startswith("#14  timer set: timeout at ")
    assert body[:4] + body[5:13] + body[14:] == [
        "#1  started",
        "#2  __started__ in START",
        "#3  entered coding",
        "#4  task 1 queued for coding",
        "#6  paused",
        "#7  done held while paused",
        "#8  resumed",
        "#9  done applied on resume",
        "#10  done in coding",
        "#11  task 1 cancelled",
        "#12  entered testing",
        "#13  task 2 queued for testing",
        "#15  task 2 cancelled",
        "#16  cancelled",
        f"#17  done refused: {refused}",
    ]


def test_refusals_of_steering(cp: ServeProcess) -> None:
    url = cp.url
    assert ok("token", "start", "TICKET-4", '{"repo": "acme/api"}', url=url) == [
        "TICKET-4: coding, active"
    ]
    assert ok("token", "cancel", "TICKET-4", url=url) == ["TICKET-4: coding, cancelled"]
    assert stateous("token", "fire", "TICKET-4", "done", url=url) == (
        1,
        "",
        f"error: the control plane at {url} refused (409): "
        "token 'TICKET-4' is cancelled; it takes no events\n",
    )
    assert stateous("token", "resume", "TICKET-4", url=url)[2] == (
        f"error: the control plane at {url} refused (409): "
        "token 'TICKET-4' is cancelled; only a paused token can be resumed\n"
    )
    code, _, err = stateous("token", "start", "T-9", '{"repo": 5}', url=url)
    assert code == 1
    assert err.startswith(f"error: the control plane at {url} refused (422): ")
    assert err.count("\n") == 1


def test_the_url_from_the_environment_and_the_listing(cp: ServeProcess) -> None:
    assert ok("token", "start", "TICKET-5", '{"repo": "acme/api"}', url=cp.url)
    code, out, err = stateous("token", "show", env={"STATEOUS_URL": cp.url + "/"})
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "TICKET-5: coding, active"
    assert "TICKET-4: coding, cancelled" in out.splitlines()


def test_the_graph(cp: ServeProcess) -> None:
    pytest.importorskip("stateous.model.mermaid")
    assert stateous("token", "show", "--graph", url=cp.url) == (
        0,
        "stateDiagram-v2\n"
        "    direction LR\n"
        "    [*] --> coding\n"
        "    coding --> testing: done\n"
        "    coding --> [*]: stuck\n"
        "    testing --> [*]: passed\n"
        "    testing --> coding: failed [count('failed') < 3]\n"
        "    testing --> [*]: failed [otherwise]\n",
        "",
    )


def test_an_unreachable_control_plane() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, out, err = stateous("token", "show", "T-1", url=url)
    assert (code, out) == (1, "")
    assert err.startswith(f"error: cannot reach the control plane at {url}: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (
            ("token", "start", "T-1", "[1]"),
            """error: CONTEXT_JSON must be a JSON object, such as '{"repo": "acme/api"}'\n""",
        ),
        (("token", "show", "--url", "http://[::1"), None),
        (("token", "show", "--url", "http://my host:8000"), None),
    ],
)
def test_errors_before_any_request(args: tuple[str, ...], stderr: str | None) -> None:
    code, out, err = stateous(*args)
    assert (code, out) == (1, "")
    if stderr is not None:
        assert err == stderr
    else:
        assert err.startswith("error: http://") and err.count("\n") == 1
    assert "Traceback" not in err


def test_python_m_and_the_script_agree() -> None:
    script = Path(sys.executable).with_name("stateous")
    done = subprocess.run(
        [str(script), "token", "start", "T-1", "{bad"], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == stateous("token", "start", "T-1", "{bad")


def test_show_into_a_closed_pipe_ends_quietly(cp: ServeProcess) -> None:
    assert ok("token", "start", "TICKET-6", '{"repo": "acme/api"}', url=cp.url)
    # `stateous token show TICKET-6 | head -0`: the reader is gone before the first line.
    reader = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE)
    reader.wait()
    assert reader.stdin is not None
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "token", "show", "TICKET-6", "--url", cp.url],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        text=True,
    )
    reader.stdin.close()
    assert (done.returncode, done.stderr) == (1, "")
