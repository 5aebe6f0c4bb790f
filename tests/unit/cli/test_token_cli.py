"""The `token` commands: arguments, printed lines and error sentences."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from stateous.cli.main import main
from stateous.cli.token import ArgumentError, parse_json_object, resolve_url
from tests.unit.client.conftest import Script

TOKEN = {"token": "TICKET-1", "state": "testing", "status": "active", "visit": 1, "context": {}}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run `stateous ARGV` in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    out, err = capsys.readouterr()
    return int(stopped.value.code or 0), out, err


BAD_JSON = [
    (
        "{bad",
        "NAME is not valid JSON: Expecting property name enclosed in double quotes at column 2",
    ),
    (
        '{"a": 1,}',
        "NAME is not valid JSON: Illegal trailing comma before end of object at column 8",
    ),
    ('{"a": NaN}', "NAME is not valid JSON: NaN is not a JSON value"),
    ('{"a": -Infinity}', "NAME is not valid JSON: -Infinity is not a JSON value"),
    ("[" * 100_000 + "]" * 100_000, "NAME is not valid JSON: it is nested too deeply"),
    ("[1]", """NAME must be a JSON object, such as '{"repo": "acme/api"}'"""),
    ("null", """NAME must be a JSON object, such as '{"repo": "acme/api"}'"""),
]


@pytest.mark.parametrize(("text", "sentence"), BAD_JSON, ids=[s for _, s in BAD_JSON])
def test_bad_json_arguments(text: str, sentence: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        parse_json_object("NAME", text)
    assert caught.value.message == sentence


def test_good_json_arguments() -> None:
    assert parse_json_object("NAME", None) is None
    assert parse_json_object("NAME", ' {"title": "first order"} ') == {"title": "first order"}


def test_the_url_comes_from_the_option_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STATEOUS_URL", raising=False)
    assert resolve_url(None) == "http://127.0.0.1:8080"
    monkeypatch.setenv("STATEOUS_URL", "")
    assert resolve_url(None) == "http://127.0.0.1:8080"
    monkeypatch.setenv("STATEOUS_URL", "http://cp:9000")
    assert resolve_url(None) == "http://cp:9000"
    assert resolve_url("http://other") == "http://other"


@pytest.mark.parametrize(
    ("argv", "stderr"),
    [
        (
            ["token", "start", "T-1", "[1]", "--url", "http://[::1"],
            """error: CONTEXT_JSON must be a JSON object, such as '{"repo": "acme/api"}'\n""",
        ),
        (
            ["token", "fire", "T-1", "done", "{bad"],
            "error: PAYLOAD_JSON is not valid JSON: Expecting property name enclosed in double "
            "quotes at column 2\n",
        ),
        (
            ["token", "show", "--url", "http://[::1"],
            "error: http://[::1 is not a URL: the IPv6 address in brackets is not closed or not valid\n",
        ),
        (
            ["token", "pause", "T-1", "--url", "http://my host:8000/"],
            "error: http://my host:8000 has a host that is not valid: a host has only letters, "
            "digits, '-' and '.', or is an IP address\n",
        ),
    ],
)
def test_errors_before_any_request(
    argv: list[str], stderr: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(argv, capsys) == (1, "", stderr)


def test_an_environment_variable_that_cannot_be_used_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STATEOUS_SUPERVISOR_WAIT", "soon")
    assert run(["token", "show", "T-1", "--url", "http://127.0.0.1:9"], capsys) == (
        1,
        "",
        "error: the environment variable STATEOUS_SUPERVISOR_WAIT is 'soon'; it must be a "
        "number of seconds, 0 or more\n",
    )


def test_a_syntax_mistake_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["token", "start"], capsys)
    assert (code, out) == (2, "")
    assert "Missing argument 'ID'" in err


def test_help_summaries(capsys: pytest.CaptureFixture[str]) -> None:
    summaries = {
        "start": "Start a token. Starting one that exists shows it.",
        "fire": "Fire an event on a token.",
        "show": "Show a token, its children and its history. With no ID, list the tokens. "
        "With --graph, draw the workflow.",
        "pause": "Pause a token: its events are held, its tasks wait, its timers stand still.",
        "resume": "Resume a paused token: the held events apply in order.",
        "cancel": "Cancel a token for good.",
    }
    for name, summary in summaries.items():
        code, out, err = run(["token", name, "--help"], capsys)
        assert (code, err) == (0, "")
        assert out.splitlines()[2] == "  " + summary
    code, out, _ = run(["token"], capsys)
    assert code == 0
    assert out.splitlines()[2] == "  Act on tokens: start, fire, show, pause, resume, cancel."
    code, out, _ = run(["--help"], capsys)
    assert out.splitlines()[2] == (
        "  A process as a graph of states. A control plane keeps every token durable."
    )


SPEC_SUMMARIES = {
    (): "A process as a graph of states. A control plane keeps every token durable.",
    ("compile",): "Check a workflow, and write its graph file.",
    ("serve",): "Run the control plane: the HTTP API and the clock, over one database.",
    ("init",): "Write a new workflow's folder, or a supervisor's folder.",
    ("init", "workflow"): "Write a starter workflow in the folder NAME, and compile it.",
    ("init", "supervisor"): (
        "Write a supervisor's folder, from a control plane, a graph file or a flow.py."
    ),
    ("supervise",): (
        "Run the routines of a supervisor's folder. Ctrl-C once: take no new tasks and wait for "
        "the running routines. Twice: cancel them and exit."
    ),
    ("token",): "Act on tokens: start, fire, show, pause, resume, cancel.",
}


@pytest.mark.parametrize("words", list(SPEC_SUMMARIES), ids=lambda w: " ".join(w) or "stateous")
def test_every_help_summary_of_the_spec(
    words: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run([*words, "--help"], capsys)
    assert (code, err) == (0, "")
    first_paragraph = out.split("\n\n")[1]
    assert " ".join(first_paragraph.split()) == SPEC_SUMMARIES[words]


def test_the_commands_print_token_lines(
    server: tuple[str, Script], capsys: pytest.CaptureFixture[str]
) -> None:
    url, script = server
    script.answer(201, json.dumps(TOKEN))
    script.answer(200, json.dumps({"duplicate": True, "token": {**TOKEN, "status": "completed"}}))
    script.answer(200, json.dumps({**TOKEN, "state": "draft", "visit": 2, "status": "paused"}))
    script.answer(200, "[]")
    script.answer(200, json.dumps([TOKEN, {**TOKEN, "token": "T-2", "state": "__start__"}]))
    assert run(["token", "start", "TICKET-1", '{"repo": "acme/api"}', "--url", url], capsys) == (
        0,
        "TICKET-1: testing, active\n",
        "",
    )
    assert run(["token", "fire", "TICKET-1", "done", "--key", "k-1", "--url", url], capsys) == (
        0,
        "duplicate: TICKET-1: testing, completed\n",
        "",
    )
    assert run(["token", "pause", "TICKET-1", "--url", url], capsys) == (
        0,
        "TICKET-1: draft (visit 2), paused\n",
        "",
    )
    assert run(["token", "show", "--url", url], capsys) == (0, "no tokens\n", "")
    assert run(["token", "show", "--url", url], capsys)[1] == (
        "TICKET-1: testing, active\nT-2: START, active\n"
    )
    sent = [(r.method, r.path, r.body, r.headers.get("idempotency-key")) for r in script.requests]
    assert sent == [
        ("POST", "/tokens", b'{"token":"TICKET-1","context":{"repo":"acme/api"}}', None),
        ("POST", "/tokens/TICKET-1/events/done", b"{}", "k-1"),
        ("POST", "/tokens/TICKET-1/pause", b"{}", None),
        ("GET", "/tokens", b"", None),
        ("GET", "/tokens", b"", None),
    ]


def test_show_one_token(
    server: tuple[str, Script], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, script = server
    monkeypatch.setenv("STATEOUS_URL", url + "/")
    monkeypatch.setenv("TZ", "UTC")
    import time

    time.tzset()
    child = {"token": "TICKET-1.reviews.1.design-review", "state": "triage", "status": "active"}
    script.answer(200, json.dumps({**TOKEN, "state": "reviews"}))
    script.answer(200, json.dumps([child]))
    script.answer(
        200,
        json.dumps(
            [{"seq": 1, "at": "2026-10-06T23:43:39Z", "kind": "started", "data": {"context": {}}}]
        ),
    )
    assert run(["token", "show", "TICKET-1/x"], capsys) == (
        0,
        "TICKET-1: reviews, active\n"
        "  child TICKET-1.reviews.1.design-review: triage, active\n"
        "23:43:39  #1  started\n",
        "",
    )
    assert [r.path for r in script.requests] == [
        "/tokens/TICKET-1%2Fx",
        "/tokens?parent=TICKET-1%2Fx&limit=1000",
        "/tokens/TICKET-1%2Fx/history",
    ]


def test_refusals_and_odd_answers(
    server: tuple[str, Script], capsys: pytest.CaptureFixture[str]
) -> None:
    url, script = server
    script.answer(404, json.dumps({"error": "there is no token 'NOPE'", "code": "token_not_found"}))
    script.answer(200, "<html></html>", "text/html")
    script.answer(200, "[1, 2]")
    script.answer(200, json.dumps({"duplicate": True, "token": 5}))
    assert run(["token", "show", "NOPE", "--url", url], capsys) == (
        1,
        "",
        f"error: the control plane at {url} refused (404): there is no token 'NOPE'\n",
    )
    assert run(["token", "cancel", "T", "--url", url], capsys)[2] == (
        f"error: the control plane at {url} answered 200 with something that is not JSON; "
        "check the URL\n"
    )
    wrong = f"error: the control plane at {url} sent an answer of the wrong shape; check the URL\n"
    assert run(["token", "show", "--url", url], capsys) == (1, "", wrong)
    assert run(["token", "fire", "T", "e", "--key", "k", "--url", url], capsys) == (1, "", wrong)


def test_a_closed_stdout_ends_quietly() -> None:
    # `stateous token show --help | (exit)`: the reader is gone before the help is written.
    reader = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE)
    reader.wait()
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "token", "show", "T", "--graph", "--help"],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert reader.stdin is not None
    reader.stdin.close()
    assert (done.returncode, done.stderr) == (1, "")


def test_show_prints_the_trace_id_of_a_token_with_a_trace(
    server: tuple[str, Script], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # With tracing, `GET /tokens/{id}` has `trace_id` when the token has a trace.
    url, script = server
    monkeypatch.setenv("TZ", "UTC")
    import time

    time.tzset()
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    script.answer(200, json.dumps({**TOKEN, "trace_id": trace}))
    script.answer(200, "[]")
    script.answer(
        200,
        json.dumps(
            [{"seq": 1, "at": "2026-10-06T23:43:39Z", "kind": "started", "data": {"context": {}}}]
        ),
    )
    assert run(["token", "show", "TICKET-1", "--url", url], capsys) == (
        0,
        f"TICKET-1: testing, active\n  trace {trace}\n23:43:39  #1  started\n",
        "",
    )
