"""The guard language (docs/guards.md): parsing, its error messages, and evaluation."""

from __future__ import annotations

from typing import Any

import pytest

from stateous.model.guards import (
    Compare,
    Count,
    Ctx,
    GuardEnv,
    GuardError,
    Lit,
    Payload,
    parse_guard,
)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "not a valid expression"),
        ("ctx['a'] >", "not a valid expression"),
        ("a b", "not a valid expression"),
        ("ctx['a']\n> 1", "not a valid expression"),
        ("class", "not a valid expression"),
        ("ctx['a'] = 1", "not a valid expression"),
        ("ctx['a'] is None", "compare with < <= > >= == != in or not in"),
        ("ctx['a'] is not 1", "compare with < <= > >= == != in or not in"),
        ("'a' in 'abc'", "`in` must search a list literal or a value, e.g. ctx['key']"),
        ("1 not in 5", "`in` must search a list literal or a value, e.g. ctx['key']"),
        ("'a' in null", "`in` must search a list literal or a value, e.g. ctx['key']"),
        ("True", "True is not a literal of the guard language"),
        ("ctx['a'] == None", "None is not a literal of the guard language"),
        ("1j", "1j is not a literal of the guard language"),
        ("b'x'", "b'x' is not a literal of the guard language"),
        ("...", "Ellipsis is not a literal of the guard language"),
        ("ctx['a'] in [ctx['b']]", "a list may only contain literals"),
        ("ctx['a'] in [[1]]", "a list may only contain literals"),
        ("ctx['a'] in [True]", "True is not a literal of the guard language"),
        ("payload", "name a payload field, e.g. payload.severity"),
        ("ctx", "read one key, e.g. ctx['key']"),
        (
            "status == 'x'",
            "'status' is a field of a child; read it in branches.all(...) or branches.any(...)",
        ),
        (
            "final",
            "'final' is a field of a child; read it in branches.all(...) or branches.any(...)",
        ),
        ("foo", "unknown name 'foo'"),
        ("branches", "unknown name 'branches'"),
        ("ctx[0]", "only ctx['key'] may be indexed"),
        ("payload['x']", "only ctx['key'] may be indexed"),
        ("ctx['a', 'b']", "only ctx['key'] may be indexed"),
        ("ctx.x", "read context as ctx['key']"),
        ("ctx.memory", "read context as ctx['key']"),
        ("branches.all", "only payload.<field> may be read with a dot"),
        ("payload.a.b", "only payload.<field> may be read with a dot"),
        ("count(event='x')", "count() takes only the event name, e.g. count('stuck')"),
        ("count(1)", "count() takes an event name as a string, e.g. count('stuck')"),
        ("count('a', 'b')", "count() takes an event name as a string, e.g. count('stuck')"),
        ("count()", "count() takes an event name as a string, e.g. count('stuck')"),
        ("branches.all()", "branches.all() and branches.any() take one condition, and do not nest"),
        (
            "branches.any(1, 2)",
            "branches.all() and branches.any() take one condition, and do not nest",
        ),
        (
            "branches.all(c=1)",
            "branches.all() and branches.any() take one condition, and do not nest",
        ),
        (
            "branches.all(branches.any(status == 'x'))",
            "branches.all() and branches.any() take one condition, and do not nest",
        ),
        ("len(ctx['a'])", "only count(), branches.all() and branches.any() may be called"),
        ("ctx['a'].get('b')", "only count(), branches.all() and branches.any() may be called"),
        ("ctx['a'] + 1 > 2", "arithmetic is not part of the guard language"),
        ("2 ** 3", "arithmetic is not part of the guard language"),
        ("lambda: 1", "lambdas are not part of the guard language"),
        ("1 if ctx['a'] else 2", "IfExp is not part of the guard language"),
        ("{'a': 1}", "Dict is not part of the guard language"),
        ("{1, 2}", "Set is not part of the guard language"),
        ("(1, 2)", "Tuple is not part of the guard language"),
        ("ctx['a'] > 1, 2", "Tuple is not part of the guard language"),
        ("-ctx['a'] > 1", "UnaryOp is not part of the guard language"),
        ("+1", "UnaryOp is not part of the guard language"),
        ("~1", "UnaryOp is not part of the guard language"),
        ("f'x' == ctx['a']", "JoinedStr is not part of the guard language"),
        ("[x for x in y]", "ListComp is not part of the guard language"),
        ("(x := 1)", "NamedExpr is not part of the guard language"),
    ],
)
def test_parse_errors(text: str, reason: str) -> None:
    with pytest.raises(GuardError) as info:
        parse_guard(text)
    assert info.value.message == f"guard {text!r}: {reason}"
    assert info.value.reason == reason


def test_message_uses_python_repr_quoting() -> None:
    with pytest.raises(GuardError) as info:
        parse_guard("ctx['a'] is 1")
    assert (
        info.value.message == "guard \"ctx['a'] is 1\": compare with < <= > >= == != in or not in"
    )


def test_accepted_forms() -> None:
    assert parse_guard("count('failed') < 3").root == Compare((Count("failed"), Lit(3)), ("<",))
    assert parse_guard("  1 < ctx['a'] <= 5  ").root == Compare(
        (Lit(1), Ctx("a"), Lit(5)), ("<", "<=")
    )
    assert parse_guard("payload.x == -2.5").root == Compare((Payload("x"), Lit(-2.5)), ("==",))
    assert parse_guard("ctx['a'] == 1_000 or ctx['a'] == 0x10").root is not None
    assert parse_guard("ctx['s'] == 'a' 'b'").root == Compare((Ctx("s"), Lit("ab")), ("==",))
    assert parse_guard("ctx['s'] == r'\\d'").root == Compare((Ctx("s"), Lit("\\d")), ("==",))
    assert parse_guard("ctx['s'] == '\\x41\\n'").root == Compare((Ctx("s"), Lit("A\n")), ("==",))
    assert parse_guard("ctx['s'] == '''x'''").root == Compare((Ctx("s"), Lit("x")), ("==",))
    assert parse_guard("(ctx['a']\n > 1)").text == "(ctx['a']\n > 1)"
    assert parse_guard("ctx['a'] in [1, -2, 'x', true, false, null,]").root is not None
    assert parse_guard("ctx['flag']").root == Ctx("flag")
    parse_guard("branches.any(status == 'failed' and payload.x in [1] and ctx['a'] == 1)")
    parse_guard("branches.all(final in ['a', 'b'] and 'x' in payload.tags)")
    parse_guard("branches.all(token in [workflow, 'x'])")


def test_readers() -> None:
    g = parse_guard(
        "count('a') > 1 and ctx['k'] == 1 and payload.f and branches.all(payload.g == ctx['j'] and count('b') == 0)"
    )
    assert g.counted_events() == frozenset({"a", "b"})
    assert g.context_keys() == frozenset({"k", "j"})
    assert g.payload_fields() == frozenset({"f"})
    assert g.uses_branches()
    assert not parse_guard("ctx['a'] == 1").uses_branches()


def env(
    context: dict[str, Any] | None = None,
    payload: Any = None,
    counts: dict[str, int] | None = None,
    event: str | None = None,
    branches: list[dict[str, Any]] | None = None,
) -> GuardEnv:
    return GuardEnv(context or {}, payload, counts or {}, event, branches)


@pytest.mark.parametrize(
    ("text", "facts", "result"),
    [
        ("1 == 1.0", env(), True),
        ("true == 1 and false == 0", env(), True),
        ("null == null", env(), True),
        ("ctx['missing'] == null", env(), True),
        ("ctx['a'] == [1, 2]", env({"a": [1.0, 2]}), True),
        ("ctx['a'] == ctx['b']", env({"a": {"x": [1]}, "b": {"x": [1]}}), True),
        ("ctx['a'] != '1'", env({"a": 1}), True),
        ("ctx['a'] < 2", env({"a": True}), True),
        ("ctx['a'] < 'b'", env({"a": "a"}), True),
        ("ctx['a'] < [1, 3]", env({"a": [1, 2, 9]}), True),
        ("ctx['a'] < [2]", env({"a": [1, "x"]}), True),
        ("ctx['a'] < ['x']", env({"a": [1]}), False),
        ("ctx['a'] < 1", env({"a": None}), False),
        ("not (ctx['a'] >= 1)", env({"a": None}), True),
        ("ctx['a'] < '1'", env({"a": 0}), False),
        ("ctx['a'] <= ctx['a']", env({"a": {}}), False),
        ("1 in ctx['a']", env({"a": None}), False),
        ("1 not in ctx['a']", env({"a": None}), False),
        ("1 in ctx['a']", env({"a": [True]}), True),
        ("'b' in ctx['a']", env({"a": "abc"}), True),
        ("'z' not in ctx['a']", env({"a": "abc"}), True),
        ("1 in ctx['a']", env({"a": "1"}), False),
        ("1 not in ctx['a']", env({"a": "1"}), False),
        ("'k' in ctx['a']", env({"a": {"k": 1}}), True),
        ("'j' not in ctx['a']", env({"a": {"k": 1}}), True),
        ("[1] in ctx['a']", env({"a": {"k": 1}}), False),
        ("[1] not in ctx['a']", env({"a": {"k": 1}}), False),
        ("1 in ctx['a']", env({"a": 5}), False),
        ("1 not in ctx['a']", env({"a": 5}), False),
        ("1 < ctx['a'] < 5", env({"a": 3}), True),
        ("1 < ctx['a'] < 5", env({"a": 5}), False),
        ("ctx['a']", env({"a": 0.0}), False),
        ("ctx['a']", env({"a": "x"}), True),
        ("ctx['a'] or ctx['b']", env({"a": [], "b": {}}), False),
        ("payload.approved == true", env(payload={"approved": True}), True),
        ("payload.approved == true", env(payload=None), False),
        ("payload.x == null", env(payload=None), True),
        ("count('failed') < 3", env(counts={"failed": 1}, event="failed"), True),
        ("count('failed') < 3", env(counts={"failed": 2}, event="failed"), False),
        ("count('failed') == 2", env(counts={"failed": 2}, event="other"), True),
        ("count('never') == 0", env(), True),
        ("branches.all(status == 'completed')", env(branches=[]), True),
        ("branches.any(status == 'completed')", env(branches=[]), False),
        ("branches.any(status == 'completed')", env(branches=None), False),
        (
            "branches.all(status == 'completed' and final == 'approved')",
            env(
                branches=[
                    {"status": "completed", "final": "approved"},
                    {"status": "completed", "final": "approved"},
                ]
            ),
            True,
        ),
        (
            "branches.all(status == 'completed' and final == 'approved')",
            env(
                branches=[
                    {"status": "completed", "final": "approved"},
                    {"status": "completed", "final": "triage"},
                ]
            ),
            False,
        ),
        (
            "branches.any(payload.ok == true and ctx['a'] == 1)",
            env(
                {"a": 1},
                payload={"ok": False},
                branches=[{"payload": None}, {"payload": {"ok": True}}],
            ),
            True,
        ),
        (
            "branches.any(workflow in [token])",
            env(branches=[{"workflow": "w", "token": "w"}]),
            True,
        ),
    ],
)
def test_evaluation(text: str, facts: GuardEnv, result: bool) -> None:
    assert parse_guard(text).evaluate(facts) is result


def test_evaluate_never_raises_on_odd_data() -> None:
    g = parse_guard("ctx['a'] > 1 and 'x' in payload.f and branches.any(final == 1)")
    odd = GuardEnv(context={"a": object()}, payload=[1], counts={}, event=None, branches=[None, 3])  # type: ignore[list-item]  # deliberately wrong data
    assert g.evaluate(odd) is False
