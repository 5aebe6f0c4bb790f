"""The guard reader on hostile text: it returns a guard or raises `GuardError`, nothing else.

Guards are read by Python's own parser (`ast.parse`), which refuses some texts with
`ValueError`, `MemoryError` or `RecursionError` rather than `SyntaxError`; each of them
must come out as `not a valid expression`.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stateous.compiler.overlap import Verdict, prove_exclusive
from stateous.model.guards import MAX_DEPTH, Guard, GuardEnv, GuardError, parse_guard

_ENV = GuardEnv(context={"a": 1, "b": [1]}, payload={"x": "y"}, counts={"e": 2}, event="e")


def read(text: str) -> Guard | GuardError:
    """The guard, or the refusal; any other exception fails the test."""
    try:
        return parse_guard(text)
    except GuardError as exc:
        assert exc.message == f"guard {text!r}: {exc.reason}"
        return exc


def use(guard: Guard) -> Verdict:
    """Every consumer of a parsed guard runs on it without raising."""
    guard.evaluate(_ENV)
    guard.context_keys()
    guard.payload_fields()
    guard.counted_events()
    guard.uses_branches()
    return prove_exclusive(
        guard, guard, event="e", context_schema=None, payload_schema=None, defs={}
    )


def refusal(text: str) -> str:
    outcome = read(text)
    assert isinstance(outcome, GuardError), outcome
    return outcome.reason


_PIECES = [
    "ctx['a']", "payload.x", "count('e')", "branches.all(", "branches.any(", "status", "1",
    "-2.5", "'s'", "true", "null", "None", "[", "]", "(", ")", "{", "}", ",", ":", " and ",
    " or ", "not ", " < ", " == ", " in ", " not in ", " is ", " + ", "lambda ", " if ",
    " else ", "*", "**", ".", "\\", "\n", "#", "\x00", "\udc80", "f'", "b'", "'", '"',
]  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60))
def test_random_text_is_a_guard_or_a_refusal(text: str) -> None:
    outcome = read(text)
    if isinstance(outcome, Guard):
        use(outcome)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join))
def test_random_guard_pieces_are_a_guard_or_a_refusal(text: str) -> None:
    outcome = read(text)
    if isinstance(outcome, Guard):
        use(outcome)


_WRAPPERS = [
    "({})", "not {}", "[{}]", "({} and ctx['a'])", "(ctx['a'] or {})", "branches.all({})",
    "-{}", "{} + 1", "{}.x", "{}[0]", "f({})", "({} == 1)", "1 < {} < 2", "{{{}}}", "({},)",
    "lambda: {}", "{} if 1 else 2",
]  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    wrappers=st.lists(st.sampled_from(_WRAPPERS), min_size=1, max_size=6),
    depth=st.integers(min_value=1, max_value=3000),
)
def test_deeply_nested_expressions_are_a_guard_or_a_refusal(
    wrappers: list[str], depth: int
) -> None:
    text = "ctx['a']"
    for level in range(depth):
        text = wrappers[level % len(wrappers)].format(text)
    outcome = read(text)
    if isinstance(outcome, Guard):
        use(outcome)


@pytest.mark.parametrize(
    "text",
    [
        "ctx['a'] == 1\x00",  # ValueError or SyntaxError, depending on Python
        "ctx['a'] == '\udc80'",  # a lone surrogate cannot be encoded: UnicodeEncodeError
        "(" * 201 + "1" + ")" * 201,  # Python refuses more than 200 nested brackets
        "not " * 100_000 + "ctx['a']",  # the parser's stack overflows: MemoryError
        "1 + " * 100_000 + "1",  # building the tree recurses too deeply: RecursionError
        "ctx['a'] == " + "1" * 5000,  # more digits than Python converts: SyntaxError
        "ctx['a'] >",
    ],
)
def test_what_python_refuses_is_not_a_valid_expression(text: str) -> None:
    assert refusal(text) == "not a valid expression"


def test_depth_limit() -> None:
    deepest = "not " * (MAX_DEPTH - 1) + "ctx['a']"
    guard = parse_guard(deepest)
    assert guard.context_keys() == frozenset({"a"})
    assert guard.evaluate(_ENV) is (MAX_DEPTH % 2 == 1)
    use(guard)
    assert refusal("not " + deepest) == "not a valid expression"


def test_unknown_escape_is_kept_without_a_warning() -> None:
    # pytest turns warnings into errors here: Python's SyntaxWarning must not escape.
    assert parse_guard("ctx['s'] == '\\q'").evaluate(
        GuardEnv(context={"s": "\\q"}, payload=None, counts={}, event=None)
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("(yield)", "Yield is not part of the guard language"),
        ("(yield from x)", "YieldFrom is not part of the guard language"),
        ("await ctx['a']", "Await is not part of the guard language"),
        ("ctx[1:2]", "only ctx['key'] may be indexed"),
        ("-True", "UnaryOp is not part of the guard language"),
        ("-1j", "UnaryOp is not part of the guard language"),
        ("count(*e)", "count() takes an event name as a string, e.g. count('stuck')"),
        ("count(**e)", "count() takes only the event name, e.g. count('stuck')"),
        (
            "branches.any(*e)",
            "branches.all() and branches.any() take one condition, and do not nest",
        ),
        ("ctx['a'] in [-x]", "a list may only contain literals"),
    ],
)
def test_other_python_nodes_are_named(text: str, reason: str) -> None:
    assert refusal(text) == reason
