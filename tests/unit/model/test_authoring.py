"""The authoring API's declaration errors, raised at the call: every message exactly."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from stateous import END, START, Workflow
from stateous.model.authoring import DeclarationError, State


class Ctx(BaseModel):
    amount: int


class Verdict(BaseModel):
    approved: bool
    note: str = ""


def refused(call: Callable[[], Any]) -> str:
    with pytest.raises(DeclarationError) as info:
        call()
    return info.value.message


RULE = "use a-z, 0-9, '_' and '-', starting with a letter, at most 64 characters"


def test_workflow_errors() -> None:
    assert refused(lambda: Workflow("Bad")) == f"workflow name 'Bad' is not valid: {RULE}"
    assert refused(lambda: Workflow("a" * 65)) == f"workflow name {'a' * 65!r} is not valid: {RULE}"
    assert refused(lambda: Workflow("ok", context=dict)) == (
        "workflow 'ok': context must be a pydantic model class, not <class 'dict'>"
    )
    flow = Workflow("a" * 64, context=Ctx)
    assert (flow.name, flow.context, flow.states, flow.events, flow.transitions) == (
        "a" * 64,
        Ctx,
        {},
        {},
        [],
    )


def test_state_errors() -> None:
    flow = Workflow("w")
    child = Workflow("c")
    flow.state("s")
    cases: list[tuple[Callable[[], Any], str]] = [
        (
            lambda: flow.state("__start__"),
            "state '__start__' is Stateous's own; import START and END instead of declaring them",
        ),
        (
            lambda: flow.state("__end__"),
            "state '__end__' is Stateous's own; import START and END instead of declaring them",
        ),
        (lambda: flow.state("9x"), f"state name '9x' is not valid: {RULE}"),
        (lambda: flow.state("s"), "state 's' is already declared"),
        (
            lambda: flow.state("t", timeout="2 hours"),
            "state 't': '2 hours' is not a duration; write e.g. '30s', '10m', '2h', '1d'",
        ),
        (
            lambda: flow.state("t", timeout="3651d"),
            "state 't': '3651d' is too long; a duration is at most 3650d",
        ),
        (
            lambda: flow.state("t", retries=-1),
            "state 't': retries must be a whole number, 0 or more, not -1",
        ),
        (
            lambda: flow.state("t", retries=True),
            "state 't': retries must be a whole number, 0 or more, not True",
        ),
        (
            lambda: flow.state("t", retries=1.0),
            "state 't': retries must be a whole number, 0 or more, not 1.0",
        ),
        (
            lambda: flow.state("t", parallel=child),
            "state 't': parallel takes a list of workflows, e.g. parallel=[review]",
        ),
        (
            lambda: flow.state("t", parallel=["c"]),
            "state 't': parallel takes a list of workflows, e.g. parallel=[review]",
        ),
        (lambda: flow.state("t", parallel=[flow]), "state 't': a workflow cannot run itself"),
        (
            lambda: flow.state("t", parallel=[child, child]),
            "state 't' runs the workflow 'c' two times; each child needs a workflow of its own",
        ),
        (
            lambda: flow.state("t", parallel=[child], retries=1),
            "state 't': a parallel state has no task, so it has no retries",
        ),
        (
            lambda: flow.state("t", parallel=[child], join="some"),
            "state 't': join must be 'all' or 'any', not 'some'",
        ),
        (
            lambda: flow.state("t", parallel=[child], inputs="repo"),
            "state 't': inputs is a list of context keys, e.g. inputs=['repo']",
        ),
        (
            lambda: flow.state("t", parallel=[child], inputs=[""]),
            "state 't': inputs is a list of context keys, e.g. inputs=['repo']",
        ),
        (
            lambda: flow.state("t", join="any"),
            "state 't': join and inputs are for a parallel state; add parallel=[...]",
        ),
        (
            lambda: flow.state("t", inputs=["repo"]),
            "state 't': join and inputs are for a parallel state; add parallel=[...]",
        ),
    ]
    for call, message in cases:
        assert refused(call) == message
    assert list(flow.states) == ["s"]
    p = flow.state("p", parallel=[child], join="any", inputs=["a"], timeout="2d", into="res")
    assert (p.is_parallel, p.parallel, p.join, p.inputs, p.timeout, p.into) == (
        True,
        (child,),
        "any",
        ("a",),
        "2d",
        "res",
    )


def test_event_errors() -> None:
    flow = Workflow("w")
    flow.event("e")
    for own in ("timeout", "error", "joined", "__started__"):
        assert refused(functools.partial(flow.event, own)) == (
            f"event {own!r} is Stateous's own; transitions use it by name, without a declaration"
        )
    assert refused(lambda: flow.event("E")) == f"event name 'E' is not valid: {RULE}"
    assert refused(lambda: flow.event("e")) == "event 'e' is already declared"
    assert refused(lambda: flow.event("f", payload=Verdict(approved=True))) == (
        "event 'f': payload must be a pydantic model class, not Verdict(approved=True, note='')"
    )
    assert refused(lambda: flow.event("f", payload=int)) == (
        "event 'f': payload must be a pydantic model class, not <class 'int'>"
    )
    ev = flow.event("g", payload=Verdict, into="verdict")
    assert (ev.name, ev.payload, ev.into) == ("g", Verdict, "verdict")


def build() -> tuple[Workflow, State, State]:
    flow = Workflow("orders", context=Ctx)
    a = flow.state("a")
    b = flow.state("b")
    flow.event("go")
    flow.event("rev", payload=Verdict)
    return flow, a, b


def test_transition_errors() -> None:
    flow, a, b = build()
    other = Workflow("other")
    foreign = other.state("a")
    foreign_event = other.event("go")
    child = Workflow("c")
    par = flow.state("par", parallel=[child])
    cases: list[tuple[Callable[[], Any], str]] = [
        (
            lambda: flow.transition(foreign, b, on="go"),
            "state 'a' belongs to workflow 'other', not 'orders'",
        ),
        (
            lambda: flow.transition(a, foreign, on="go"),
            "state 'a' belongs to workflow 'other', not 'orders'",
        ),
        (
            lambda: flow.transition(a, START, on="go"),
            "nothing may lead into START: a token is there only as it starts",
        ),
        (
            lambda: flow.transition(END, a, on="go"),
            "nothing may leave END: entering it completes the token",
        ),
        (
            lambda: flow.transition(START, END),
            "a token cannot go straight from START to END; it needs a state to be in",
        ),
        (
            lambda: flow.transition(START, a, on="go"),
            "a transition from START takes no `on=`: the engine takes it as the token starts. Choose among several with `when=` and `otherwise=True`.",
        ),
        (
            lambda: flow.transition(a, b),
            "a transition from 'a' needs `on=`: the event it is taken on",
        ),
        (
            lambda: flow.transition(a, b, on="nope"),
            "event 'nope' is not declared in workflow 'orders'",
        ),
        (
            lambda: flow.transition(a, b, on=foreign_event),
            "event 'go' is not declared in workflow 'orders'",
        ),
        (
            lambda: flow.transition(a, b, on="__started__"),
            "'__started__' is Stateous's own: only a transition from START is taken on it",
        ),
        (
            lambda: flow.transition(a, b, on="joined"),
            "only a parallel state is left on 'joined'; 'a' has no parallel=[...]",
        ),
        (
            lambda: flow.transition(a, b, on="go", when="true", otherwise=True),
            "a fallback (otherwise=True) has no guard; drop `when`",
        ),
        (lambda: flow.transition(a, b, on="go", when="x +"), "guard 'x +': not a valid expression"),
        (
            lambda: flow.transition(a, b, on="go", when="branches.all(status == 'x')"),
            "guard \"branches.all(status == 'x')\": branches.all() and branches.any() are for transitions on 'joined'",
        ),
        (
            lambda: flow.transition(a, b, on="go", when="payload.z == 1"),
            "'go' payload has no field 'z'",
        ),
        (
            lambda: flow.transition(
                a, b, on="rev", when="payload.z == 1 and payload.y == 1 and payload.note == ''"
            ),
            "'rev' payload has no field 'y'",
        ),
        (
            lambda: flow.transition(a, b, on="timeout", when="payload.x"),
            "'timeout' payload has no field 'x'",
        ),
        (
            lambda: flow.transition(par, b, on="joined", when="payload.x"),
            "'joined' payload has no field 'x'",
        ),
        (
            lambda: flow.transition(START, a, when="payload.x == 1"),
            "guard 'payload.x == 1': START's guards read the context only; a token has no event, and so no payload, as it starts",
        ),
        (
            lambda: flow.transition(START, a, when="count('go') == 0"),
            "guard \"count('go') == 0\": START's guards cannot count events; nothing has happened yet as a token starts",
        ),
    ]
    for call, message in cases:
        assert refused(call) == message
    assert flow.transitions == []


def test_stale_state_of_a_redefined_workflow() -> None:
    old = Workflow("w")
    stale = old.state("a")
    new = Workflow("w")
    new.state("a")
    assert (
        refused(lambda: new.transition(stale, END, on="error"))
        == "state 'a' belongs to workflow 'w', not 'w'"
    )


def test_ambiguity() -> None:
    flow, a, b = build()
    flow.transition(START, a)
    assert refused(lambda: flow.transition(START, b)) == (
        "START is ambiguous: two transitions have no guard. Give one a `when`, and mark the fallback otherwise=True."
    )
    flow.transition(a, b, on="go")
    assert refused(lambda: flow.transition(a, END, on="go", otherwise=True)) == (
        "'go' from 'a' is ambiguous: two transitions have no guard. Give one a `when`, and mark the fallback otherwise=True."
    )
    flow.transition(a, END, on="go", when="ctx['amount'] > 1")


def test_allowed_without_complaint() -> None:
    flow, a, b = build()
    flow.transition(START, a, when="ctx['amount'] > 1")
    flow.transition(START, b, otherwise=True)
    flow.transition(a, a, on="go")
    flow.transition(a, END, on="timeout", when="count('timeout') > 1 and ctx['amount'] == 1")
    flow.transition(a, END, on="error")
    t = flow.transition(b, END, on=flow.events["rev"], when="payload.approved == true")
    assert (t.source, t.target, t.on, t.when, t.otherwise) == (
        b,
        END,
        "rev",
        "payload.approved == true",
        False,
    )
    start = flow.transitions[0]
    assert (start.on, start.event, start.guard is not None) == (None, "__started__", True)
    assert repr(START) == "START" and repr(END) == "END"
