"""`stateous schedule ...` against the real app over a socket: the printed lines,
the next three times, `--as`/`--reason` in the audit, and the refusals as one sentence."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from stateous.cli.main import main
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
    ]) + "\n", "")  # fmt: skip
    assert run(["schedule", "add", "hourly", "--cron", "0 * * * *"], api.url, capsys)[0] == 0
    assert run(["schedule", "pause", "hourly"], api.url, capsys)[1].startswith(
        "schedule hourly (paused)\n"
    )
    times = "2026-10-19 19:00:00, 2026-10-20 19:00:00, 2026-10-21 19:00:00"
    assert run(["schedule", "list"], api.url, capsys) == (0, "\n".join([
        f"name     cron          zone          {'next times':<{len(times)}}  last token",
        f"hourly   0 * * * *     UTC           {'paused':<{len(times)}}  -",
        f"nightly  0 21 * * 1-5  Europe/Paris  {times}  -",
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
