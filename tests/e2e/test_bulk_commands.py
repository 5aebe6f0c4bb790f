"""`--reason`, `--as`, `token ... --where` and `stateous bulk` as real processes against a real
`stateous serve` of `sdlc`."""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_token_commands import history, ok, serving
from tests.support import ServeProcess

ACME = 'repo="acme/api"'
CANCEL = "(active or paused, the statuses cancel acts on)"
"""What the dry-run line says when no --status is given to a bulk cancel."""


def start_four(url: str) -> None:
    """T-1, T-2, T-3 (repo acme/api) and O-1 (repo other), started over HTTP as `stateous token
    start T-1 '{...}'` would (no `by`), without the cost of four more processes: this file tests
    the bulk commands, not `token start`."""
    starts = [("T-1", "acme/api"), ("T-2", "acme/api"), ("T-3", "acme/api"), ("O-1", "other")]
    for token, repo in starts:
        body = {"token": token, "context": {"repo": repo}}
        assert httpx.post(url + "/tokens", json=body, timeout=30).status_code == 201


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[ServeProcess]:
    """The four tokens on a control plane of their own: bulk job ids start at 1."""
    with serving(tmp_path) as served:
        start_four(served.url)
        yield served


@pytest.fixture(scope="module")
def unchanged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """The four tokens on one control plane shared by the tests that change nothing."""
    with serving(tmp_path_factory.mktemp("bulk")) as served:
        start_four(served.url)
        yield served


def run(*args: str, url: str, **env: str) -> tuple[int, list[str], str]:
    """`python -m stateous ARGS --url URL` with no terminal on stdin: (code, stdout lines, stderr)."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("STATEOUS_URL", "STATEOUS_ACTOR")}
    done = subprocess.run(
        [sys.executable, "-m", "stateous", *args, "--url", url],
        capture_output=True, text=True, env={**full_env, **env}, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done.returncode, done.stdout.splitlines(), done.stderr


def in_terminal(answer: str, *args: str, url: str) -> tuple[int, str]:
    """Run with a pseudo-terminal on stdin that answers the question; (code, stdout)."""
    primary, secondary = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "STATEOUS_URL"}
    process = subprocess.Popen(
        [sys.executable, "-m", "stateous", *args, "--url", url],
        stdin=secondary, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    os.close(secondary)
    os.write(primary, answer.encode() + b"\n")
    out, err = process.communicate(timeout=120)
    os.close(primary)
    assert err == "", err
    return process.returncode, out


def test_a_dry_run_and_no_terminal_without_yes(unchanged: ServeProcess) -> None:
    url = unchanged.url
    where = ("token", "cancel", "--where", "--context", ACME)
    line = f"3 tokens match {CANCEL}: T-1, T-2, T-3"
    assert run(*where, "--dry-run", url=url) == (0, [line], "")
    assert run(*where, url=url) == (
        1, [line],
        "error: cancel 3 tokens needs a yes, and there is no terminal to ask in; add --yes\n",
    )  # fmt: skip
    assert httpx.get(url + "/bulk").json() == []


def test_yes_runs_the_job_and_the_history_says_who(fresh: ServeProcess) -> None:
    url = fresh.url
    args = ("token", "cancel", "--where", "--context", ACME, "--yes", "--reason", "contract ended")
    assert run(*args, url=url, STATEOUS_ACTOR="alice") == (0, [
        f"3 tokens match {CANCEL}: T-1, T-2, T-3",
        "job 1: cancel 3 tokens",
        "job 1 finished: 3 done, none skipped",
    ], "")  # fmt: skip
    lines = history(ok("token", "show", "T-2", url=url)[1:])
    assert lines[-1] == "#7  cancelled [alice, cli, bulk 1: contract ended]"
    assert ok("token", "show", "O-1", url=url)[0] == "O-1: coding, active"
    code, listed, _ = run("bulk", "list", url=url)
    assert code == 0 and len(listed) == 2
    assert listed[0] == "job  action  status    progress  created              by"
    assert listed[1].startswith("1    cancel  finished  3/3       ")
    assert listed[1].endswith("  alice, cli: contract ended")
    code, shown, _ = run("bulk", "show", "1", url=url)
    assert (code, shown[:3]) == (0, [
        "job 1: cancel, finished [alice, cli: contract ended]",
        'filter: {"status": ["active", "paused"], "context": {"repo": "acme/api"}}',
        "matched 3, 3 done, none skipped",
    ])  # fmt: skip
    assert run("bulk", "stop", "1", url=url) == (1, [], (
        f"error: the control plane at {url} refused (409): bulk job 1 is finished; only a running "
        "job can be stopped\n"
    ))  # fmt: skip
    assert run("bulk", "show", "9", url=url) == (
        1, [], f"error: the control plane at {url} refused (404): there is no bulk job 9\n"
    )  # fmt: skip


def test_the_terminal_question(fresh: ServeProcess) -> None:
    url = fresh.url
    code, out = in_terminal("n", "token", "pause", "--where", "--status", "active", url=url)
    assert (code, out) == (
        0,
        "4 tokens match: T-1, T-2, T-3, O-1\npause 4 tokens? [y/N] nothing done\n",
    )
    assert httpx.get(url + "/bulk").json() == []
    code, out = in_terminal("y", "token", "pause", "--where", "--prefix", "T-", url=url)
    assert (code, out.splitlines()) == (0, [
        "3 tokens match (active, the status pause acts on): T-1, T-2, T-3",
        "pause 3 tokens? [y/N] job 1: pause 3 tokens",
        "job 1 finished: 3 done, none skipped",
    ])  # fmt: skip


def test_a_bulk_fire_and_its_skipped_tokens(fresh: ServeProcess) -> None:
    url = fresh.url
    ok("token", "fire", "T-3", "done", url=url)  # T-3 is in testing now: `done` is refused there
    code, lines, err = run("token", "fire", "--where", "--prefix", "T-", "--yes", "done", url=url)
    assert (code, err) == (0, "")
    assert lines == [
        "3 tokens match (active or paused, the statuses fire acts on): T-1, T-2, T-3",
        "job 1: fire 3 tokens",
        "job 1 finished: 2 done, 1 skipped (event_not_allowed 1)",
    ]
    assert ok("token", "show", "T-1", url=url)[0] == "T-1: testing, active"


def test_without_status_each_action_selects_what_it_can_act_on(fresh: ServeProcess) -> None:
    """T-1 and T-2 active, T-3 completed, O-1 paused: no action takes a token it would skip."""
    url = fresh.url
    ok("token", "fire", "T-3", "stuck", url=url)
    ok("token", "pause", "O-1", url=url)

    def dry(*args: str) -> tuple[int, list[str], str]:
        return run("token", *args, "--where", "--dry-run", url=url)

    assert dry("pause") == (0, ["2 tokens match (active, the status pause acts on): T-1, T-2"], "")
    assert dry("resume") == (0, ["1 token matches (paused, the status resume acts on): O-1"], "")
    assert dry("cancel") == (0, [f"3 tokens match {CANCEL}: T-1, T-2, O-1"], "")
    assert dry("fire", "done") == (
        0, ["3 tokens match (active or paused, the statuses fire acts on): T-1, T-2, O-1"], "",
    )  # fmt: skip
    assert dry("retry") == (0, ["no tokens match (failed, the status retry acts on)"], "")
    # An explicit --status wins, and the line then says nothing of a default.
    assert dry("pause", "--status", "completed") == (0, ["1 token matches: T-3"], "")
    assert dry("cancel", "--status", "active", "--status", "completed") == (
        0, ["3 tokens match: T-1, T-2, T-3"], "",
    )  # fmt: skip


def test_a_bulk_pause_by_state_leaves_out_the_ended_tokens(fresh: ServeProcess) -> None:
    """The issue's case: a pause by state took every completed token there only to skip it."""
    url = fresh.url
    ok("token", "fire", "T-3", "stuck", url=url)
    ok("token", "fire", "T-2", "done", url=url)  # active, in testing
    assert run("token", "pause", "--where", "--state", "coding", "--yes", url=url) == (0, [
        "2 tokens match (active, the status pause acts on): T-1, O-1",
        "job 1: pause 2 tokens",
        "job 1 finished: 2 done, none skipped",
    ], "")  # fmt: skip
    code, shown, _ = run("bulk", "show", "1", url=url)
    assert (code, shown[1:3]) == (0, [
        'filter: {"status": ["active"], "state": ["coding"]}',
        "matched 2, 2 done, none skipped",
    ])  # fmt: skip


def test_who_acts(fresh: ServeProcess) -> None:
    url = fresh.url
    ok("token", "start", "P-1", '{"repo": "r"}', url=url)  # says nothing: no by
    assert run("token", "start", "P-2", '{"repo": "r"}', "--reason", "a test", url=url)[0] == 0
    assert run("token", "pause", "P-2", "--as", "bob", url=url)[0] == 0
    audit = httpx.get(url + "/audit").json()
    me = f"{getpass.getuser()}@{socket.gethostname()}"
    assert [(a["token"], a["kind"], a["actor"], a["via"], a["reason"]) for a in audit] == [
        ("P-2", "paused", "bob", "cli", None),
        ("P-2", "started", me, "cli", "a test"),
    ]


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (("token", "cancel", "--where", "T-1"), "give a token ID or --where, not both"),
        (("token", "cancel"), "give a token ID, or --where and the flags that select tokens"),
        (
            ("token", "cancel", "--prefix", "T-"),
            "the selection flags (--status, --state, ...) need --where",
        ),
        (
            ("token", "cancel", "--where", "--before", "yesterday"),
            "Invalid value for '--before': 'yesterday' is not an ISO 8601 time, such as "
            "2026-10-16T20:48:44Z",
        ),
    ],
)
def test_usage_mistakes(unchanged: ServeProcess, args: tuple[str, ...], sentence: str) -> None:
    """A mistake in the command line: click's usage line and exit 2, nothing asked."""
    code, out, err = run(*args, url=unchanged.url)
    assert (code, out) == (2, [])
    assert err.startswith("Usage: stateous token cancel [OPTIONS] [ID]\n"), err
    assert err.endswith(f"\nError: {sentence}\n"), err


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (
            ("token", "cancel", "--where", "--context", "repo=acme"),
            "--context repo: 'acme' is not JSON; a text is written in quotes, such as "
            "repo='\"acme\"'",
        ),
        (
            ("token", "cancel", "--where", "--context", "repo"),
            "--context takes KEY=JSON, such as customer='\"acme\"', not 'repo'",
        ),
    ],
)
def test_selection_mistakes(unchanged: ServeProcess, args: tuple[str, ...], sentence: str) -> None:
    assert run(*args, url=unchanged.url) == (1, [], f"error: {sentence}\n")


@pytest.mark.parametrize(
    ("flag", "sentence"),
    [
        ("--state", "--state names 'nope', which is not a state of the workflow"),
        ("--status", "--status names 'nope', which is not a token status"),
    ],
)
def test_a_selection_the_control_plane_refuses_names_the_flag(
    unchanged: ServeProcess, flag: str, sentence: str
) -> None:
    url = unchanged.url
    assert run("token", "pause", "--where", flag, "nope", "--dry-run", url=url) == (
        1,
        [],
        f"error: the control plane at {url} refused (422): {sentence}\n",
    )
