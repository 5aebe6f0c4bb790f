"""`stateous token find KEY=VALUE ...`: its arguments, the query it sends and what
it prints, against the client's scripted server on a real socket."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from stateous.cli.main import main
from stateous.client import routes
from stateous.client.search import (
    SearchError,
    context_params,
    search_pair,
    search_pairs,
    search_value,
    shown_pairs,
)
from tests.unit.client.conftest import Script

DEAD_URL = "http://127.0.0.1:9"  # nothing listens: a command that asked would exit 1


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run `stateous ARGV` in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    out, err = capsys.readouterr()
    return int(stopped.value.code or 0), out, err


def sent(script: Script) -> list[list[tuple[str, str]]]:
    """Each request's path and query parameters, decoded, in order."""
    return [
        [("path", urlsplit(r.path).path), *parse_qsl(urlsplit(r.path).query)]
        for r in script.requests
    ]


def token(ident: str, status: str = "active") -> dict[str, Any]:
    return {"token": ident, "state": "review", "visit": 1, "status": status, "context": {}}


# ---------------------------------------------------------------- the values


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4711", 4711),
        ("true", True),
        ('"acme"', "acme"),
        ("acme", "acme"),
        ('"4711"', "4711"),
        ("", ""),
        ("acme corp", "acme corp"),
        ("1.5", 1.5),
        ("null", None),
        ("NaN", "NaN"),  # not strict JSON: the text itself
        ("[1", "[1"),
    ],
)
def test_a_value_is_json_when_it_reads_as_json_else_text(text: str, value: Any) -> None:
    assert search_value(text) == value
    assert type(search_value(text)) is type(value)


def test_pairs() -> None:
    assert search_pair("customer=acme") == ("customer", "acme")
    assert search_pair(" order_id =4711") == ("order_id", 4711)
    assert search_pair("note=a=b") == ("note", "a=b")
    assert search_pairs(["customer=acme", "vip=true"]) == {"customer": "acme", "vip": True}
    for bad in ("acme", "=acme", " =acme", ""):
        with pytest.raises(SearchError) as caught:
            search_pair(bad)
        assert str(caught.value) == f"{bad!r} is not KEY=VALUE, such as customer=acme"
    with pytest.raises(SearchError) as twice:
        search_pairs(["a=1", "a=2"])
    assert str(twice.value) == "the key 'a' is given twice; a token's key has one value"


def test_the_query_holds_each_value_as_json_text() -> None:
    context = {"customer": "acme", "order_id": 4711, "vip": True, "city": "Zürich"}
    assert context_params(context) == {
        "context.customer": '"acme"',
        "context.order_id": "4711",
        "context.vip": "true",
        "context.city": '"Zürich"',
    }
    assert context_params(None) == {}
    request = routes.tokens("active", None, 5, {"customer": "acme"})
    assert request.params == {"status": "active", "limit": "5", "context.customer": '"acme"'}
    assert routes.tokens(None, None, None).params == {}


def test_a_search_as_typed_back() -> None:
    context = {"customer": "acme", "order_id": 4711, "code": "4711", "name": "a b", "empty": ""}
    assert shown_pairs(context) == 'customer=acme order_id=4711 code="4711" name="a b" empty='
    assert search_pairs(shown_pairs(context).split(" ")[:3]) == {
        "customer": "acme",
        "order_id": 4711,
        "code": "4711",
    }


# ---------------------------------------------------------------- the command


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        ([], "Missing argument 'KEY=VALUE...'."),
        (["acme"], "Invalid value for 'KEY=VALUE...': 'acme' is not KEY=VALUE, such as customer=acme"),
        (["customer=acme", "=x"],
         "Invalid value for 'KEY=VALUE...': '=x' is not KEY=VALUE, such as customer=acme"),
        (["a=1", "a=2"], "the key 'a' is given twice; a token's key has one value"),
        (["a=1", "--status", "gone"],
         "Invalid value for '--status': 'gone' is not one of 'active', 'paused', 'completed', "
         "'failed', 'cancelled'."),
        (["a=1", "--limit", "0"], "Invalid value for '--limit': 0 is not a whole number from 1 to 1000"),
    ],
)  # fmt: skip
def test_mistakes_of_the_command_line_exit_2(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["token", "find", *argv, "--url", DEAD_URL], capsys)
    assert (code, out) == (2, "")
    assert err.startswith("Usage: stateous token find [OPTIONS] KEY=VALUE...\n"), err
    assert err.splitlines()[-1] == f"Error: {error}"


def test_the_found_tokens_are_listed_as_token_show_lists_them(
    server: tuple[str, Script], capsys: pytest.CaptureFixture[str]
) -> None:
    url, script = server
    script.answer(200, json.dumps([token("ORDER-2"), token("ORDER-1", "paused")]))
    script.answer(200, "[]")
    argv = ["token", "find", "customer=acme", "order_id=4711", "--url", url]
    assert run(argv, capsys) == (0, "ORDER-2: review, active\nORDER-1: review, paused\n", "")
    assert run([*argv, "--status", "failed"], capsys) == (0, "no tokens\n", "")
    assert sent(script) == [
        [("path", "/tokens"), ("context.customer", '"acme"'), ("context.order_id", "4711")],
        [
            ("path", "/tokens"),
            ("status", "failed"),
            ("context.customer", '"acme"'),
            ("context.order_id", "4711"),
        ],
    ]


def test_a_cut_page_says_how_many_more(
    server: tuple[str, Script], capsys: pytest.CaptureFixture[str]
) -> None:
    url, script = server
    found = [token(f"T-{n}") for n in range(5, 0, -1)]
    script.answer(200, json.dumps(found[:2]))
    script.answer(200, json.dumps(found))  # counted by finding as many as one listing gives
    script.answer(200, json.dumps(found[:2]))
    script.answer(200, json.dumps([token(f"T-{n}") for n in range(1000)]))
    argv = ["token", "find", "vip=true", "--limit", "2", "--url", url]
    assert run(argv, capsys) == (
        0,
        "T-5: review, active\nT-4: review, active\n… and 3 more (--limit N to see more)\n",
        "",
    )
    assert run(argv, capsys)[1].splitlines()[-1] == (
        "… and at least 998 more (--limit N to see more)"
    )
    assert sent(script)[:2] == [
        [("path", "/tokens"), ("limit", "2"), ("context.vip", "true")],
        [("path", "/tokens"), ("limit", "1000"), ("context.vip", "true")],
    ]


@pytest.mark.parametrize(
    ("status", "answer", "line"),
    [
        (
            422,
            {
                "error": "'colour' is not a search key; the search keys are customer, order_id",
                "code": "invalid_argument",
            },
            "'colour' is not a search key; the search keys are customer, order_id",
        ),
        (
            409,
            {
                "error": "the search key 'customer' is being filled: 1,200 of 5,000 tokens",
                "code": "search_not_ready",
            },
            "the search key 'customer' is being filled: 1,200 of 5,000 tokens",
        ),
    ],
)
def test_a_refusal_is_one_error_line(
    status: int,
    answer: dict[str, str],
    line: str,
    server: tuple[str, Script],
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, script = server
    script.answer(status, json.dumps(answer))
    assert run(["token", "find", "colour=red", "--url", url], capsys) == (
        1,
        "",
        f"error: the control plane at {url} refused ({status}): {line}\n",
    )
