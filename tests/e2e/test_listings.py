"""The listings that say when they are cut (`… and N more`) and where their next page starts
(`next page: --after CURSOR` on stderr, issue 32), `bulk list`'s header and `stateous stats`, as
real processes against a real `stateous serve` of `sdlc`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stateous.model.history import local_datetime
from tests.e2e.test_inbox_command import post, waiting
from tests.e2e.test_token_commands import serving, stateous
from tests.support import ServeProcess, free_port, serve_process, sqlite_url
from tests.support.graphs import SDLC, write_graph

CUT = "(--limit N to see more)"
ANSWER = "answer one with: stateous token fire ID EVENT [PAYLOAD_JSON] --reason TEXT"


def ok(*args: str, url: str) -> list[str]:
    """The stdout lines of a command that must succeed with nothing on stderr, right-trimmed."""
    code, out, err = stateous(*args, url=url)
    assert (code, err) == (0, ""), (args, code, out, err)
    return [line.rstrip() for line in out.splitlines()]


def paged(*args: str, url: str) -> tuple[list[str], str | None]:
    """The stdout lines of a listing that must succeed, and the cursor of its next page (None
    when stderr says none)."""
    code, out, err = stateous(*args, url=url)
    assert code == 0, (args, code, out, err)
    after = None
    if err:
        assert err.startswith("next page: --after ") and err.count("\n") == 1, err
        after = err.removeprefix("next page: --after ").strip()
    return [line.rstrip() for line in out.splitlines()], after


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A control plane with T-1 … T-5 in coding: T-1 … T-3 wait for a person, T-4 is paused,
    and three bulk jobs (dry runs are no jobs) paused T-4 or found nothing to do."""
    with serving(tmp_path_factory.mktemp("five")) as served:
        url = served.url
        for n in range(1, 6):
            post(url, "/tokens", {"token": f"T-{n}", "context": {"repo": f"acme/r{n}"}})
        for _ in range(3):
            waiting(url, "coding", None)
        for n in (4, 4, 5):
            job = {"action": "pause", "filter": {"context": {"repo": f"acme/r{n}"}}}
            assert httpx.post(f"{url}/bulk", json=job).status_code == 202
        wait_for_jobs(url)
        yield url


def wait_for_jobs(url: str) -> None:
    """Until no bulk job runs."""
    for _ in range(100):
        if all(job["status"] != "running" for job in httpx.get(f"{url}/bulk").json()):
            return
        time.sleep(0.1)
    raise AssertionError("the bulk jobs did not finish")


def test_the_token_listing_says_how_many_more(five: str) -> None:
    lines, after = paged("token", "show", "--limit", "3", url=five)
    assert lines == [
        "T-5: coding, paused",
        "T-4: coding, paused",
        "T-3: coding, active",
        f"… and 2 more {CUT}",
    ]
    every = ok("token", "show", "--limit", "5", url=five)
    assert every[-1] == "T-1: coding, active"
    assert after is not None
    assert paged("token", "show", "--limit", "3", "--after", after, url=five) == (every[3:], None)
    lines, after = paged("token", "show", "--limit", "2", "--after", after, url=five)
    assert (lines, after) == (every[3:], None)  # a full last page: no next page
    assert len(ok("token", "show", url=five)) == 5
    for option in ("--limit", "--after"):
        code, out, err = stateous("token", "show", "T-1", option, "3", url=five)
        assert (code, out) == (2, "")
        assert err.splitlines()[-1] == (
            f"Error: {option} is for the listing: give no ID and no --graph"
        )
    code, out, err = stateous("token", "show", "--after", "nope", url=five)
    assert (code, out) == (1, "")
    assert "'after' is a cursor from the Link header" in err


def test_the_inbox_says_how_many_more(five: str) -> None:
    since = [local_datetime(e["since"]) for e in httpx.get(f"{five}/inbox").json()]
    lines, after = paged("inbox", "--limit", "2", url=five)
    assert after is not None
    assert paged("inbox", "--limit", "2", "--after", after, url=five)[0][2] == (
        f"T-3     coding   {since[2]}   -              done, stuck"
    )
    assert lines == [
        "token   state    waiting since         the question   the events it takes",
        "─" * 73,
        f"T-1     coding   {since[0]}   -              done, stuck",
        f"T-2     coding   {since[1]}   -              done, stuck",
        f"… and 1 more {CUT}",
        ANSWER,
    ]
    lines, _ = paged("inbox", "--limit", "2", "--state", "coding", url=five)
    assert lines[-2] == f"… and 1 more {CUT}"
    assert ok("inbox", "--limit", "3", url=five)[-2].startswith("T-3 ")


def test_bulk_list_has_a_header_and_says_how_many_more(five: str) -> None:
    jobs = httpx.get(f"{five}/bulk").json()
    created = [local_datetime(job["created_at"]) for job in jobs]
    lines, after = paged("bulk", "list", "--limit", "2", url=five)
    assert after is not None
    assert paged("bulk", "list", "--limit", "2", "--after", after, url=five)[0][1:] == [
        f"1    pause   finished  1/1       {created[2]}  -"
    ]
    assert lines == [
        f"job  action  status    progress  created{' ' * (len(created[0]) - 5)}by",
        f"3    pause   finished  1/1       {created[0]}  -",
        f"2    pause   finished  1/1       {created[1]}  -",
        f"… and 1 more {CUT}",
    ]
    assert ok("bulk", "list", url=five)[-1].startswith("1    pause   finished  1/1 ")


def test_stats_counts_by_status_and_by_state(five: str) -> None:
    answer: dict[str, Any] = httpx.get(f"{five}/stats").json()
    oldest = answer["oldest_queued_at"]
    assert oldest is not None
    assert ok("stats", url=five) == [
        "status     tokens",
        "active          3",
        "paused          2",
        "completed       0",
        "failed          0",
        "cancelled       0",
        "all             5",
        "",
        "state    active  paused  queued  claimed  waiting  supervisors",
        "coding        3       2       2        0        3            0",
        "testing       0       0       0        0        0            0",
        "",
        f"oldest queued task: {local_datetime(oldest)}",
    ]


def test_stats_with_an_auth_token(tmp_path: Path) -> None:
    (tmp_path / "token.txt").write_text("s3cret-token-of-the-test\n", encoding="utf-8")
    (tmp_path / "token.txt").chmod(0o600)  # serve refuses a token file others can read
    extra = ["--auth-token-file", str(tmp_path / "token.txt")]
    graph = write_graph(tmp_path, SDLC)
    with serve_process(graph, sqlite_url(tmp_path), cwd=tmp_path, extra=extra) as served:
        code, out, err = stateous("stats", url=served.url)
        assert (code, out) == (1, "")
        assert err.startswith(f"error: the control plane at {served.url} refused (401)")
        env = {"STATEOUS_AUTH_TOKEN": "s3cret-token-of-the-test"}
        code, out, err = stateous("stats", url=served.url, env=env)
        assert (code, err) == (0, "")
        assert out.splitlines()[:2] == ["status     tokens", "active          0"]
        assert out.splitlines()[-1] == "oldest queued task: -"
    _close(served)


def _close(served: ServeProcess) -> None:
    for pipe in (served.process.stdout, served.process.stderr):
        if pipe is not None:
            pipe.close()


def test_stats_without_a_control_plane() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, out, err = stateous("stats", url=url)
    assert (code, out) == (1, "")
    assert err.startswith(f"error: cannot reach the control plane at {url}: ")
    assert err.count("\n") == 1
