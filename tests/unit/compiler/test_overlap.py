"""The overlap proof of two guards (docs/guards.md): the worked results, and properties checked with
random data."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stateous.compiler.overlap import (
    Domain,
    Exclusive,
    Overlap,
    Undecidable,
    domain_of,
    prove_exclusive,
)
from stateous.model.guards import GuardEnv, parse_guard

CONTEXT = {
    "properties": {
        "amount": {"type": "integer"},
        "f": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opt": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "name": {"type": "string"},
        "kind": {"$ref": "#/schemas/Kind"},
        "a": {"type": "integer"},
        "s": {"type": "string"},
        "o": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "t": {"type": "array", "items": {"type": "string"}},
    }
}
PAYLOAD = {
    "properties": {
        "approved": {"type": "boolean"},
        "note": {"default": "", "type": "string"},
        "b": {"type": "boolean"},
    }
}
DEFS = {"Kind": {"enum": ["red", "green"], "type": "string"}}


def prove(a: str, b: str, event: str = "ev") -> Any:
    return prove_exclusive(
        parse_guard(a),
        parse_guard(b),
        event=event,
        context_schema=CONTEXT,
        payload_schema=PAYLOAD,
        defs=DEFS,
    )


@pytest.mark.parametrize(
    ("a", "b", "verdict"),
    [
        ("ctx['amount'] > 100", "ctx['amount'] > 50", Overlap("ctx['amount'] = 101")),
        ("ctx['amount'] > 100", "ctx['amount'] <= 100", Exclusive()),
        (
            "payload.approved == true",
            "payload.note != ''",
            Overlap("payload.approved = True, payload.note = '\\x00'"),
        ),
        ("count('failed') < 3", "count('failed') >= 3", Exclusive()),
        ("count('ev') == 2", "count('ev') > 1", Overlap("count('ev') = 2")),
        ("ctx['f'] > 1.5", "ctx['f'] < 2", Overlap("ctx['f'] = 1.75")),
        ("'a' in ctx['tags']", "'b' in ctx['tags']", Overlap("ctx['tags'] = ['a', 'b']")),
        ("'x' in ctx['tags']", "ctx['tags'] == ['y']", Exclusive()),
        ("ctx['opt'] == null", "ctx['opt'] > 3", Exclusive()),
        (
            "'a' in ctx['name']",
            "ctx['amount'] > 1",
            Undecidable("`in` searches ctx['name'], which is not a list"),
        ),
        (
            "ctx['amount'] > 1",
            "'a' in count('x')",
            Undecidable("`in` searches count('x'), which is not a list"),
        ),
        (
            "ctx['amount'] > count('ev')",
            "ctx['amount'] > 1",
            Undecidable("a guard compares two values with each other"),
        ),
        (
            "ctx['amount'] > 1",
            "ctx['a'] in ctx['tags']",
            Undecidable("a guard compares two values with each other"),
        ),
        (
            "branches.all(status == 'completed')",
            "ctx['amount'] > 1",
            Undecidable("a guard with branches.all or branches.any cannot be proven exclusive"),
        ),
        (
            "ctx['amount'] > 1",
            "not branches.any(status == 'failed')",
            Undecidable("a guard with branches.all or branches.any cannot be proven exclusive"),
        ),
        ("[1] < [2]", "ctx['amount'] > 1", Undecidable("a guard orders a list")),
        ("ctx['x'] >= [1]", "true", Undecidable("a guard orders a list")),
        (
            "(ctx['amount'] > 5) == true",
            "ctx['a'] == 1",
            Undecidable("a guard compares the result of a condition"),
        ),
        ("ctx['kind'] == 'red'", "ctx['kind'] != 'red'", Exclusive()),
        ("ctx['kind'] == 'red'", "ctx['kind'] in ['red', 'blue']", Overlap("ctx['kind'] = 'red'")),
        ("ctx['free']", "ctx['free'] == 0", Exclusive()),
        ("ctx['free']", "ctx['free'] != 0", Overlap("ctx['free'] = -1")),
        ("ctx['free'] in [1]", "ctx['free'] == 1.0", Overlap("ctx['free'] = 1")),
        # Beyond the usual candidate values: "\0" stands for the strings between "" and the
        # smallest literal.
        ("ctx['s']", "ctx['s'] < 'a'", Overlap("ctx['s'] = '\\x00'")),
        ("ctx['s'] > 'a'", "ctx['s'] < 'b'", Overlap("ctx['s'] = 'a\\x00'")),
        ("ctx['s'] == ''", "ctx['s'] > ''", Exclusive()),
    ],
)
def test_worked_results(a: str, b: str, verdict: Any) -> None:
    assert prove(a, b) == verdict


def test_too_many_values() -> None:
    guards = " and ".join(f"ctx['k{i}'] == {i}" for i in range(6))
    assert prove(guards, "true") == Undecidable("they read too many values to try every case")


def test_example_lists_every_accessor_in_order() -> None:
    verdict = prove("payload.b and ctx['s'] == 'x'", "count('x') == 0 and ctx['a'] > 1")
    assert verdict == Overlap("count('x') = 0, ctx['a'] = 2, ctx['s'] = 'x', payload.b = True")


def test_domains() -> None:
    assert domain_of({"type": "integer"}, {}) == Domain(kinds=frozenset({"int"}))
    assert domain_of({"type": ["string", "null"]}, {}) == Domain(
        kinds=frozenset({"string", "null"})
    )
    assert domain_of({"type": "weird"}, {}).any
    assert domain_of({}, {}).any
    assert domain_of({"const": 3}, {}) == Domain(enum=(3,))
    assert domain_of({"anyOf": [{"$ref": "#/schemas/Kind"}, {"type": "null"}]}, DEFS) == Domain(
        enum=("red", "green", None)
    )
    assert domain_of({"anyOf": [{"enum": [1]}, {"type": "string"}]}, {}) == Domain(
        kinds=frozenset({"int", "string"})
    )
    assert domain_of({"anyOf": [{"type": "integer"}, {}]}, {}).any


# -- properties --------------------------------------------------------------------------------

ACCESSORS: dict[str, st.SearchStrategy[Any]] = {
    "ctx['a']": st.integers(-3, 120),
    "ctx['f']": st.one_of(st.integers(-3, 5), st.floats(-3, 5, allow_nan=False)),
    "ctx['s']": st.text(alphabet="ab\x00~", max_size=3),
    "ctx['o']": st.one_of(st.none(), st.integers(-3, 5)),
    "payload.b": st.booleans(),
    "count('ev')": st.integers(1, 5),
    "count('x')": st.integers(0, 5),
}
LITERALS = {
    "ctx['a']": ["-1", "0", "1", "2.5", "3", "100", "'a'", "null", "true"],
    "ctx['f']": ["-1", "0", "1", "1.5", "2", "'a'", "null"],
    "ctx['s']": ["''", "'a'", "'b'", "'ab'", "1", "null"],
    "ctx['o']": ["null", "0", "3", "'a'"],
    "payload.b": ["true", "false", "1", "0", "null"],
    "count('ev')": ["1", "2", "3", "2.5"],
    "count('x')": ["0", "1", "2"],
}
OPS = ["==", "!=", "<", "<=", ">", ">="]


@st.composite
def atoms(draw: st.DrawFn) -> str:
    acc = draw(st.sampled_from(sorted(ACCESSORS)))
    shape = draw(st.integers(0, 3))
    if shape == 0:
        return acc
    if shape == 1:
        items = draw(st.lists(st.sampled_from(LITERALS[acc]), min_size=1, max_size=3))
        op = draw(st.sampled_from(["in", "not in"]))
        return f"{acc} {op} [{', '.join(items)}]"
    lit = draw(st.sampled_from(LITERALS[acc]))
    op = draw(st.sampled_from(OPS))
    return f"{acc} {op} {lit}" if shape == 2 else f"{lit} {op} {acc}"


def guards() -> st.SearchStrategy[str]:
    return st.recursive(
        atoms(),
        lambda inner: st.one_of(
            st.builds(lambda x: f"not ({x})", inner),
            st.builds(lambda x, y: f"({x}) and ({y})", inner, inner),
            st.builds(lambda x, y: f"({x}) or ({y})", inner, inner),
        ),
        max_leaves=3,
    )


def facts(draw: st.DrawFn) -> GuardEnv:
    values = {acc: draw(strategy) for acc, strategy in ACCESSORS.items()}
    return GuardEnv(
        context={
            "a": values["ctx['a']"],
            "f": values["ctx['f']"],
            "s": values["ctx['s']"],
            "o": values["ctx['o']"],
        },
        payload={"b": values["payload.b"]},
        counts={"ev": values["count('ev')"] - 1, "x": values["count('x')"]},
        event="ev",
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=guards(), b=guards(), data=st.data())
def test_exclusive_means_never_both_true(a: str, b: str, data: st.DataObject) -> None:
    first, second = parse_guard(a), parse_guard(b)
    verdict = prove(a, b)
    if isinstance(verdict, Exclusive):
        for _ in range(20):
            env = data.draw(st.composite(facts)())
            assert not (first.evaluate(env) and second.evaluate(env)), (a, b, env)
    elif isinstance(verdict, Overlap):
        assert verdict.facts is not None
        assert first.evaluate(verdict.facts) and second.evaluate(verdict.facts)
