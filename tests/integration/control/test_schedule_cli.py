"""`stateous schedule ...` against the real app over a socket: the printed lines,
the next three times, `--as`/`--reason` in the audit, `add --replace`, a slot that failed in
`show` and `list`, and the refusals as one sentence."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from stateous.cli.main import main
from stateous.control.clock import FakeClock
from stateous.control.ticker import Ticker
from tests.integration.control.test_schedule_routes import OWNER, serve_newer
from tests.support.app import RunningApi

#: The app runs on the `clock` fixture of conftest.py (a FakeClock at 2026-10-16T20:48:44Z).
pytestmark = pytest.mark.fake_clock


@pytest.fixture(autouse=True)
def in_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Times print in this computer's zone: UTC here."""
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.delenv("STATEOUS_ACTOR", raising=False)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def run(argv: list[str], url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run `stateous ARGV --url URL` in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--url", url])
    out, err = capsys.readouterr()
    return int(stopped.value.code or 0), out, err


def test_add_list_show_pause_resume_remove(
    api: RunningApi, capsys: pytest.CaptureFixture[str]
) -> None:
    add = ["schedule", "add", "nightly", "--cron", "0 21 * * 1-5", "--tz", "Europe/Paris",
           "--context", '{"title": "report"}', "--id", "report-{at}", "--catch-up", "all",
           "--as", "alice", "--reason", "month end"]  # fmt: skip
    assert run(add, api.url, capsys) == (0, "\n".join([
        "schedule nightly",
        "cron: 0 21 * * 1-5 in Europe/Paris",
        'context: {"title": "report"}',
        "token id: report-{at}",
        "catch up: all",
        "next: 2026-10-19 19:00:00, 2026-10-20 19:00:00, 2026-10-21 19:00:00",
        "last: -",
        "last error: -",
        "failed slots: 0",
    ]) + "\n", "")  # fmt: skip
    hourly = ["schedule", "add", "hourly", "--cron", "0 * * * *", "--context", '{"title": "h"}']
    assert run(hourly, api.url, capsys)[0] == 0
    assert run(["schedule", "pause", "hourly"], api.url, capsys)[1].startswith(
        "schedule hourly (paused)\n"
    )
    times = "2026-10-19 19:00:00, 2026-10-20 19:00:00, 2026-10-21 19:00:00"
    assert run(["schedule", "list"], api.url, capsys) == (0, "\n".join([
        f"name     cron          zone          {'next times':<{len(times)}}  last token  last error",
        f"hourly   0 * * * *     UTC           {'paused':<{len(times)}}  -           -",
        f"nightly  0 21 * * 1-5  Europe/Paris  {times}  -           -",
    ]) + "\n", "")  # fmt: skip
    shown = run(["schedule", "resume", "hourly"], api.url, capsys)[1]
    assert "next: 2026-10-16 21:00:00, 2026-10-16 22:00:00, 2026-10-16 23:00:00\n" in shown
    assert run(["schedule", "show", "hourly"], api.url, capsys)[1] == shown
    assert run(["schedule", "remove", "hourly"], api.url, capsys) == (
        0, "removed the schedule hourly\n", "",
    )  # fmt: skip
    acts = httpx.get(f"{api.url}/audit").json()
    assert [(a["kind"], a["actor"], a["via"], a["reason"]) for a in acts] == [
        ("schedule_added", "alice", "cli", "month end")
    ]


def test_refusals_are_one_sentence(api: RunningApi, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        (["schedule", "add", "x", "--cron", "0 0 9 * * *"],
         "(422): 'cron' has 6 fields; a schedule's cron expression has 5 (minute hour "
         "day-of-month month day-of-week), e.g. '0 9 * * 1-5'\n"),
        (["schedule", "add", "x", "--cron", "0 9 * * *", "--tz", "Mars/Base"],
         "(422): 'tz' 'Mars/Base' is no IANA time zone, e.g. Europe/Paris\n"),
        (["schedule", "add", "x", "--cron", "0 9 * * *", "--context", "[1]"],
         """error: --context must be a JSON object, such as '{"repo": "acme/api"}'\n"""),
        (["schedule", "add", "x", "--cron", "0 9 * * *"],
         "(422): 'context' cannot start a token of the version served now (orders: Item: "
         "'title' is a required property)\n"),
        (["schedule", "add", "x", "--cron", "0 9 * * *", "--context", '{"title": 5}', "--replace"],
         "(422): 'context' cannot start a token of the version served now (orders: title: 5 "
         "is not of type 'string')\n"),
        (["schedule", "show", "nope"], "(404): there is no schedule 'nope'\n"),
        (["schedule", "pause", "nope"], "(404): there is no schedule 'nope'\n"),
        (["schedule", "resume", "nope"], "(404): there is no schedule 'nope'\n"),
        (["schedule", "remove", "nope"], "(404): there is no schedule 'nope'\n"),
    ]  # fmt: skip
    refused = f"error: the control plane at {api.url} refused "
    for argv, sentence in cases:
        expected = sentence if sentence.startswith("error:") else refused + sentence
        assert run(argv, api.url, capsys) == (1, "", expected), argv
    assert run(["schedule", "list"], api.url, capsys) == (0, "no schedules\n", "")
    code, _, err = run(["schedule", "add", "x"], api.url, capsys)
    assert code == 2 and "Missing option '--cron'" in err


def test_add_replace_replaces_or_adds_and_a_taken_name_points_to_it(
    api: RunningApi, capsys: pytest.CaptureFixture[str]
) -> None:
    add = ["schedule", "add", "nightly", "--cron", "0 21 * * *", "--context", '{"title": "a"}',
           "--as", "alice"]  # fmt: skip
    assert run(add, api.url, capsys)[0] == 0
    assert run(add, api.url, capsys) == (1, "", (
        "error: a schedule 'nightly' exists already; add --replace to replace it with these "
        "fields\n"
    ))  # fmt: skip
    other = ["schedule", "add", "nightly", "--cron", "0 6 * * *", "--context", '{"title": "b"}',
             "--replace", "--as", "bob"]  # fmt: skip
    code, out, err = run(other, api.url, capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[1:3] == ["cron: 0 6 * * * in UTC", 'context: {"title": "b"}']
    # A bad context with --replace changes nothing.
    bad = ["schedule", "add", "nightly", "--cron", "0 7 * * *", "--replace"]
    assert run(bad, api.url, capsys)[0] == 1
    shown = httpx.get(f"{api.url}/schedules/nightly").json()
    assert (shown["cron"], shown["context"]) == ("0 6 * * *", {"title": "b"})
    fresh = ["schedule", "add", "weekly", "--cron", "0 8 * * 1", "--context", '{"title": "w"}',
             "--replace", "--as", "alice"]  # fmt: skip
    assert run(fresh, api.url, capsys)[1].startswith("schedule weekly\ncron: 0 8 * * 1 in UTC\n")
    acts = [(a["token"], a["kind"], a["actor"]) for a in httpx.get(f"{api.url}/audit").json()]
    assert acts == [
        ("schedule:weekly", "schedule_added", "alice"),
        ("schedule:nightly", "schedule_replaced", "bob"),
        ("schedule:nightly", "schedule_added", "alice"),
    ]


def test_a_slot_that_failed_in_show_and_list(
    api: RunningApi, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    add = ["schedule", "add", "hourly", "--cron", "0 * * * *", "--context", '{"title": "h"}']
    assert run(add, api.url, capsys)[0] == 0
    serve_newer(api, clock)
    clock.advance(3600)  # 21:48:44: the slot of 21:00 fails
    Ticker(api.plane).tick()
    error = f"2026-10-16 21:00:00 the token 'hourly-20261016T2100' did not start: {OWNER}"
    assert run(["schedule", "show", "hourly"], api.url, capsys) == (0, "\n".join([
        "schedule hourly",
        "cron: 0 * * * * in UTC",
        'context: {"title": "h"}',
        "token id: {name}-{at}",
        "catch up: last",
        "next: 2026-10-16 22:00:00, 2026-10-16 23:00:00, 2026-10-17 00:00:00",
        "last: -",
        f"last error: {error}",
        "failed slots: 1",
    ]) + "\n", "")  # fmt: skip
    times = "2026-10-16 22:00:00, 2026-10-16 23:00:00, 2026-10-17 00:00:00"
    assert run(["schedule", "list"], api.url, capsys) == (0, "\n".join([
        f"name    cron       zone  {'next times':<{len(times)}}  last token  last error",
        f"hourly  0 * * * *  UTC   {times}  -           {error}",
    ]) + "\n", "")  # fmt: skip
    fixed = [*add, "--context", '{"title": "h", "owner": "ops"}', "--replace"]
    assert run(fixed, api.url, capsys)[0] == 0
    clock.advance(3600)  # 22:48:44: the slot of 22:00 starts
    Ticker(api.plane).tick()
    out = run(["schedule", "show", "hourly"], api.url, capsys)[1].splitlines()
    assert out[6:] == [
        "last: hourly-20261016T2200 at 2026-10-16 22:00:00",
        "last error: 2026-10-16 21:00:00 (fixed) the token 'hourly-20261016T2100' did not "
        f"start: {OWNER}",
        "failed slots: 1",
    ]
