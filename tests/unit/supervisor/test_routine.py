"""The routine API: Occurrence, StateRef, Context, memory, notes, timers."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stateous import Context, Occurrence, OutcomeError, StateRef, on_state
from stateous.compiler.contract import contract_text
from stateous.supervisor.outcome import outcome_of
from stateous.supervisor.routine import routine_state

DATA = Path(__file__).parent / "data"


@pytest.fixture
def contract(tmp_path: Path) -> Iterator[Any]:
    """The generated contract of `sdlc`, imported."""
    doc = json.loads((DATA / "sdlc.json").read_text(encoding="utf-8"))
    (tmp_path / "contract.py").write_text(contract_text(doc), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    sys.modules.pop("contract", None)
    import contract as module  # type: ignore[import-not-found]

    yield module
    sys.path.remove(str(tmp_path))
    sys.modules.pop("contract", None)


class Recorder:
    """A sink that records what a routine sends."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def note(self, text: str) -> None:
        self.sent.append(("note", text))

    def memory(self, key: str, value: Any) -> None:
        self.sent.append(("memory", (key, value)))


def make_ctx(sink: Recorder, **context: Any) -> Context[Any]:
    return Context(
        token="T-1",
        task=7,
        visit=2,
        attempt=1,
        context=context,
        memory={"dev": {"session": "s1"}},
        entered_by="done",
        sink=sink,
    )


def test_occurrences(contract: Any) -> None:
    assert repr(contract.events.done()) == "done(None)"
    tests = contract.Tests(passed=1, failed=0)
    assert repr(contract.events.passed(tests)) == "passed(Tests(passed=1, failed=0))"
    assert contract.events.passed.payload_model() is contract.Tests
    assert contract.events.done.payload_model() is None
    assert contract.events.passed.name == "passed"


def test_state_refs(contract: Any) -> None:
    coding = contract.states.coding
    assert coding.name == "coding"
    assert coding.emits == (contract.events.done, contract.events.stuck)
    assert coding.may_emit(contract.events.done())
    assert not coding.may_emit(contract.events.passed(None))

    # `stateous` exports its names lazily (a module __getattr__), so mypy sees Any here.
    class done(Occurrence[None]):  # type: ignore[misc]  # same name, another class
        name = "done"

    assert not coding.may_emit(done())
    with pytest.raises(AttributeError):
        coding.name = "x"
    assert StateRef("x").emits == ()


def test_outcome_schema_of_the_spec(contract: Any) -> None:
    assert json.dumps(contract.states.coding.outcome_schema()) == (
        '{"oneOf": [{"type": "object", "properties": {"event": {"const": "done"}}, "required": '
        '["event"], "additionalProperties": false}, {"type": "object", "properties": {"event": '
        '{"const": "stuck"}}, "required": ["event"], "additionalProperties": false}]}'
    )
    schema = contract.states.testing.outcome_schema()
    assert schema["oneOf"][0]["required"] == ["event", "payload"]
    assert schema["oneOf"][0]["properties"]["payload"]["required"] == ["passed", "failed"]
    with pytest.raises(OutcomeError) as caught:
        StateRef("hold").outcome_schema()
    assert str(caught.value) == "'hold' may emit no event, so no outcome schema fits it"


@pytest.mark.parametrize(
    ("state", "data", "message"),
    [
        ("testing", [], "an outcome of 'testing' is an object with 'event' and 'payload'"),
        (
            "testing",
            {"event": "passed", "zz": 1, "aa": 2},
            "an outcome of 'testing' has only 'event' and 'payload', not 'aa'",
        ),
        ("testing", {"payload": {}}, "'testing' may not emit None"),
        ("testing", {"event": "done"}, "'testing' may not emit 'done'"),
        (
            "coding",
            {"event": "done", "payload": None},
            "'done' carries no payload, but the outcome has one",
        ),
        (
            "testing",
            {"event": "passed", "payload": {"passed": "3"}},
            "the payload of 'passed' does not fit Tests (failed: Field required)",
        ),
        (
            "testing",
            {"event": "passed"},
            "the payload of 'passed' does not fit Tests (payload: Input should be an object)",
        ),
    ],
)
def test_outcome_refusals(contract: Any, state: str, data: object, message: str) -> None:
    ref = getattr(contract.states, state)
    allowed = {
        "testing": "'testing' may emit 'passed', 'failed'",
        "coding": "'coding' may emit 'done', 'stuck'",
    }
    with pytest.raises(OutcomeError) as caught:
        ref.outcome(data)
    assert str(caught.value) == f"{message}; {allowed[state]}"
    assert isinstance(caught.value, ValueError)


def test_outcomes_accepted(contract: Any) -> None:
    assert repr(contract.states.coding.outcome({"event": "done"})) == "done(None)"
    got = contract.states.testing.outcome(
        {"event": "passed", "payload": {"passed": "3", "failed": 0}}
    )
    assert repr(got) == "passed(Tests(passed=3, failed=0))"


def test_on_state(contract: Any) -> None:
    def routine(ctx: Any) -> None:
        return None

    assert on_state(contract.states.coding)(routine) is routine
    assert routine_state(routine) is contract.states.coding
    with pytest.raises(TypeError) as caught:
        on_state("coding")
    assert str(caught.value) == "@on_state takes a state from contract.states, not 'coding'"


def test_context_reads_are_copies_and_writes_are_json() -> None:
    ctx = make_ctx(Recorder(), items=[1], repo="r")
    ctx["items"].append(2)
    assert ctx["items"] == [1]
    ctx["items"] = (1, 2)
    assert ctx["items"] == [1, 2]
    assert ctx.writes() == {"items": [1, 2]}
    with pytest.raises(KeyError, match="the token's context has no 'nope'"):
        ctx["nope"]
    assert ctx.get("nope", 5) == 5
    with pytest.raises(TypeError, match=r"ctx\['x'\] must be JSON: "):
        ctx["x"] = {1, 2}
    with pytest.raises(TypeError, match=r"ctx\['x'\] must be JSON: "):
        ctx["x"] = float("nan")
    assert (ctx.token, ctx.task, ctx.visit, ctx.attempt) == ("T-1", 7, 2, 1)
    assert ctx.entered_by.name == "done"
    assert ctx.entered_by.payload is None


def test_notes() -> None:
    sink = Recorder()
    ctx = make_ctx(sink)
    ctx.note("  hello  ")
    ctx.note("   ")
    ctx.note("")
    ctx.note("x" * 500)
    with pytest.raises(ValueError, match="a note is at most 500 characters; this one has 501"):
        ctx.note("y" * 501)
    assert sink.sent == [("note", "hello"), ("note", "x" * 500)]


def test_memory_rules() -> None:
    sink = Recorder()
    ctx = make_ctx(sink)
    assert ctx.memory["dev"] == {"session": "s1"}
    ctx.memory["dev"]["session"] = "changed"
    assert ctx.memory["dev"] == {"session": "s1"}
    assert "dev" in ctx.memory and len(ctx.memory) == 1 and list(ctx.memory) == ["dev"]
    ctx.memory["k"] = (1,)
    del ctx.memory["dev"]
    assert sink.sent == [("memory", ("k", [1])), ("memory", ("dev", None))]
    with pytest.raises(KeyError):
        del ctx.memory["dev"]
    with pytest.raises(ValueError, match="a memory key is 1 to 128 characters, not ''"):
        ctx.memory[""] = 1
    with pytest.raises(ValueError, match="a memory key is 1 to 128 characters"):
        ctx.memory["k" * 129] = 1
    with pytest.raises(ValueError) as caught:
        ctx.memory["k"] = None
    assert str(caught.value) == "memory['k'] = None: use `del ctx.memory['k']` to delete a key"
    with pytest.raises(TypeError, match=r"memory\['k'\] must be JSON: "):
        ctx.memory["k"] = object()
    assert len(sink.sent) == 2


def test_schedules(contract: Any) -> None:
    ctx = make_ctx(Recorder())
    ctx.schedule(contract.events.stuck, after="30s")
    ctx.schedule(contract.events.failed(contract.Tests(passed=0, failed=1)), after="1d")
    assert ctx.schedules() == [
        {"event": "stuck", "after": "30s"},
        {"event": "failed", "payload": {"passed": 0, "failed": 1}, "after": "1d"},
    ]
    with pytest.raises(ValueError) as caught:
        ctx.schedule(contract.events.failed, after="1s")
    assert str(caught.value) == (
        "'failed' carries a payload; schedule an occurrence with its payload, not the event class"
    )
    with pytest.raises(
        ValueError, match=r"'2 hours' is not a duration; write e.g. '30s', '10m', '2h', '1d'"
    ):
        ctx.schedule(contract.events.stuck, after="2 hours")
    with pytest.raises(ValueError, match="'3651d' is too long; a duration is at most 3650d"):
        ctx.schedule(contract.events.stuck, after="3651d")


def test_what_a_routine_returns(contract: Any) -> None:
    ctx = make_ctx(Recorder())
    ctx["k"] = 1
    ctx.schedule(contract.events.stuck, after="1m")
    testing = contract.states.testing
    result = contract.events.passed(contract.Tests(passed=2, failed=0))
    assert outcome_of(result, testing, ctx, 3) == {
        "kind": "event",
        "event": "passed",
        "payload": {"passed": 2, "failed": 0},
        "context": {"k": 1},
        "schedules": [{"event": "stuck", "after": "1m"}],
        "attempt": 3,
    }
    assert outcome_of(contract.events.passed({"passed": 1}), testing, ctx, 1)["kind"] == "event"
    assert "payload" not in outcome_of(contract.events.passed({"passed": 1}), testing, ctx, 1)
    assert outcome_of(None, testing, ctx, 1)["kind"] == "waiting"
    assert outcome_of(contract.events.done(), testing, ctx, 1) == {
        "kind": "failed",
        "error": "the routine returned 'done', which 'testing' may not emit (allowed: passed, failed)",
        "context": None,
        "schedules": [],
        "attempt": 1,
    }
    assert outcome_of("x" * 200, testing, ctx, 1)["error"] == (
        f"the routine of 'testing' returned '{'x' * 96}...; return an event or None"
    )
    assert outcome_of(42, StateRef("hold"), ctx, 1)["error"] == (
        "the routine of 'hold' returned 42; return an event or None"
    )
    assert outcome_of(contract.events.done(), StateRef("hold"), ctx, 1)["error"].endswith(
        "(allowed: nothing)"
    )
