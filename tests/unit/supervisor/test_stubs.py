"""Routine states, stub file names and stub text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stateous.compiler.stubs import implemented_paths, plan_stubs, routine_states, stub_text

DATA = Path(__file__).parent / "data"


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def many() -> dict[str, Any]:
    """The workflow of `init supervisor`'s example runs: `queue`, a clash of names, two child
    workflows."""
    doc = load("changes.json")
    doc["states"] = {
        "coding": {"emits": ["done"]},
        "queue": {"emits": []},
        "merging": {"emits": ["merged"]},
        "security_review_triage": {"emits": []},
        "reviews": doc["states"]["reviews"],
    }
    return doc


def test_routine_states_in_order() -> None:
    names = [s.name for s in routine_states(many())]
    assert names == [
        "coding",
        "queue",
        "merging",
        "security_review_triage",
        "security-review/triage",
        "design-review/triage",
    ]


def test_file_names_of_the_spec_example(tmp_path: Path) -> None:
    plans = plan_stubs(many(), tmp_path)
    assert [(p.action, p.file_name, p.why) for p in plans] == [
        ("wrote", "coding.py", ""),
        ("wrote", "queue_routine.py", "queue.py would hide a Python module"),
        ("wrote", "merging.py", ""),
        ("wrote", "security_review_triage.py", ""),
        (
            "wrote",
            "security_review_triage_2.py",
            "security_review_triage.py is the stub of 'security_review_triage'",
        ),
        ("wrote", "design_review_triage.py", ""),
    ]


def test_the_sdlc_stub_is_the_spec_text() -> None:
    coding = routine_states(load("sdlc.json"))[0]
    assert stub_text(coding) == (
        '"""The `coding` state of the `sdlc` workflow."""\n'
        "\n"
        "from stateous import on_state\n"
        "\n"
        "from contract import TicketContext, events, states\n"
        "\n"
        "\n"
        "@on_state(states.coding)\n"
        "def coding(ctx: TicketContext) -> events.done | events.stuck:\n"
        "    raise NotImplementedError(\"do the work of 'coding' here\")\n"
    )


def test_a_child_stub_and_a_stub_without_context_or_events() -> None:
    child = routine_states(load("changes.json"))[3]
    text = stub_text(child)
    assert text.startswith('"""The `triage` state of the `design-review` workflow."""\n')
    assert "@on_state(states.design_review.triage)\n" in text
    assert (
        "def triage(ctx: ReviewContext) -> events.design_review.approved | "
        "events.design_review.rejected:\n" in text
    )
    assert "do the work of 'design-review/triage' here" in text
    doc = {
        "stateous": 1,
        "workflow": "w",
        "states": {"hold": {"emits": []}},
        "events": {},
        "transitions": [],
        "schemas": {},
    }
    assert stub_text(routine_states(doc)[0]) == (
        '"""The `hold` state of the `w` workflow."""\n'
        "\n"
        "from stateous import Context, on_state\n"
        "\n"
        "from contract import states\n"
        "\n"
        "\n"
        "@on_state(states.hold)\n"
        "def hold(ctx: Context) -> None:\n"
        "    raise NotImplementedError(\"do the work of 'hold' here\")\n"
    )


def test_implemented_states_are_found_by_parsing(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "import stateous, contract\n"
        "@stateous.on_state(contract.states.coding)\n"
        "async def x(ctx): ...\n"
        "class K:\n"
        "    @on_state(states.security_review.triage)\n"
        "    def y(self): ...\n"
        "@on_state(states.a.b.c)\n"
        "def z(ctx): ...\n"
        "@on_state(other.thing, 2)\n"
        "def w(ctx): ...\n",
        encoding="utf-8",
    )
    (tmp_path / "broken.py").write_text("def (:\n", encoding="utf-8")
    (tmp_path / "contract.py").write_text("@on_state(states.merging)\ndef m(c): ...\n")
    (tmp_path / "bad.py").write_bytes(b"\xff\xfe\x00")
    assert implemented_paths(tmp_path) == {"coding", "security_review.triage"}


def test_kept_and_skipped(tmp_path: Path) -> None:
    (tmp_path / "testing.py").write_text("# nothing here yet\n", encoding="utf-8")
    (tmp_path / "mine.py").write_text(
        "@on_state(states.coding)\ndef c(ctx): ...\n", encoding="utf-8"
    )
    plans = plan_stubs(load("sdlc.json"), tmp_path)
    assert [(p.action, p.file_name) for p in plans] == [
        ("kept", "coding.py"),
        ("skipped", "testing.py"),
    ]


def test_a_hostile_workflow_name_cannot_leave_the_docstring() -> None:
    doc = load("sdlc.json")
    doc["workflow"] = '"""\nimport os\n"""\\'
    text = stub_text(routine_states(doc)[0])
    compile(text, "stub.py", "exec")
    assert (
        text.splitlines()[0]
        == '"""The `coding` state of the `\\"\\"\\"\\u000aimport os\\u000a\\"\\"\\"\\\\` workflow."""'
    )
