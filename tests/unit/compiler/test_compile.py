"""Compiling flow.py: loading, whole-graph validation, names, the examples."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from stateous.compiler.build import compile_path
from stateous.model.canonical import checksum, structure
from stateous.model.errors import StateousError
from tests.unit.model import reference as ref

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

HEAD = "from stateous import END, START, Workflow\nfrom pydantic import BaseModel\n"


def write(tmp_path: Path, body: str, schemas: str | None = None) -> str:
    flow = tmp_path / "flow.py"
    flow.write_text(HEAD + textwrap.dedent(body))
    if schemas is not None:
        (tmp_path / "schemas.py").write_text(textwrap.dedent(schemas))
    return str(flow)


def error(path: str) -> str:
    with pytest.raises(StateousError) as info:
        compile_path(path)
    return info.value.message


def test_examples_compile_to_the_reference_text() -> None:
    sdlc = compile_path(str(EXAMPLES / "sdlc" / "flow.py"))
    assert sdlc.text == ref.SDLC_GRAPH
    assert checksum(sdlc.document) == ref.SDLC_CHECKSUM
    assert structure(sdlc.document) == ref.SDLC_STRUCTURE
    assert (EXAMPLES / "sdlc" / "build" / "sdlc.json").read_text() == ref.SDLC_GRAPH
    orders = compile_path(str(EXAMPLES / "orders" / "flow.py"))
    assert (EXAMPLES / "orders" / "build" / "orders.json").read_text() == orders.text
    assert orders.document["events"]["reviewed"] == {"payload": "Verdict", "into": "verdict"}
    assert structure(orders.document) == checksum(orders.document)
    dev = compile_path(str(EXAMPLES / "parallel" / "flow.py"))
    assert (EXAMPLES / "parallel" / "build" / "dev.json").read_text() == dev.text
    assert list(dev.document) == [
        "stateous",
        "workflow",
        "context",
        "states",
        "events",
        "transitions",
        "workflows",
        "schemas",
    ]
    assert dev.document["states"]["reviews"] == {
        "timeout": "2d",
        "parallel": ["security-review", "design-review"],
        "join": "all",
        "inputs": ["repo", "branch"],
    }
    assert list(dev.document["workflows"]) == ["security-review", "design-review"]
    assert dev.document["workflows"]["security-review"]["context"] == "Review"


def test_the_starter_without_into_hashes_as_the_spec(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        from schemas import Item, Verdict
        flow = Workflow("orders", context=Item)
        draft = flow.state("draft")
        review = flow.state("review")
        submitted = flow.event("submitted")
        reviewed = flow.event("reviewed", payload=Verdict)
        flow.transition(START, draft)
        flow.transition(draft, review, on=submitted)
        flow.transition(review, END, on=reviewed, when="payload.approved == true")
        flow.transition(review, draft, on=reviewed, otherwise=True)
        """,
        '''
        from pydantic import BaseModel


        class Item(BaseModel):
            """The context of each token of `orders`."""

            title: str


        class Verdict(BaseModel):
            """The payload of the event `reviewed`."""

            approved: bool
            note: str = ""
        ''',
    )
    compiled = compile_path(path)
    assert compiled.text == ref.ORDERS_GRAPH_NO_INTO
    assert checksum(compiled.document) == ref.ORDERS_NO_INTO_CHECKSUM


def test_load_errors(tmp_path: Path) -> None:
    assert error(str(tmp_path / "nope.py")) == f"{tmp_path / 'nope.py'}: no such file"
    flow = tmp_path / "flow.py"
    flow.write_text("x = 1\ny = (\n")
    assert error(str(flow)) == f"{flow}, line 2: '(' was never closed"
    flow.write_text("import nonexistent_mod\n")
    assert (
        error(str(flow))
        == f"{flow} does not import: ModuleNotFoundError: No module named 'nonexistent_mod'"
    )
    flow.write_text(HEAD + "f = Workflow('w')\nf.state('review', timeout='2 hours')\n")
    assert (
        error(str(flow))
        == "state 'review': '2 hours' is not a duration; write e.g. '30s', '10m', '2h', '1d'"
    )
    flow.write_text(HEAD + "x = 1\n")
    assert error(str(flow)) == f"{flow} defines no Workflow at module level"
    flow.write_text(HEAD + "a = Workflow('a')\nb = Workflow('b')\nc = a\n")
    assert error(str(flow)) == f"{flow} defines 2 workflows ('a', 'b'); keep one per file"


def test_modules_are_forgotten(tmp_path: Path) -> None:
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        path = write(
            folder,
            f"""
            from schemas import Ctx
            flow = Workflow("{name}", context=Ctx)
            s = flow.state("s")
            flow.transition(START, s)
            flow.transition(s, END, on="timeout")
            """,
            f"from pydantic import BaseModel\nclass Ctx(BaseModel):\n    {name}: int\n",
        )
        doc = compile_path(path).document
        assert list(doc["schemas"]["Ctx"]["properties"]) == [name]
    assert not list(tmp_path.rglob("__pycache__"))


def test_listing_of_problems(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        class Ctx(BaseModel):
            amount: int
        class Verdict(BaseModel):
            approved: bool
            note: str = ""
        flow = Workflow("orders", context=Ctx)
        draft = flow.state("draft")
        review = flow.state("review")
        shipping = flow.state("shipping")
        reviewed = flow.event("reviewed", payload=Verdict)
        go = flow.event("go")
        flow.transition(START, draft)
        flow.transition(draft, review, on=go)
        flow.transition(review, END, on=reviewed, when="payload.approved == true")
        flow.transition(review, draft, on=reviewed, when="payload.note != ''")
        flow.transition(review, review, on=reviewed)
        flow.transition(draft, END, on=go, when="ctx['amount'] > 100 and ctx['zeta'] == 1 and ctx['beta'] == 2")
        flow.transition(draft, draft, on="timeout", when="count('nope') > 1 and count('ghost') == 0")
        flow.transition(draft, review, on="error", when="'a' in ctx['amount']")
        flow.transition(draft, END, on="error", when="ctx['amount'] > 1")
        """,
    )
    assert error(path) == "\n".join(
        [
            "workflow 'orders' is not valid:",
            "  - state 'shipping' cannot be reached from START",
            "  - 'go' from 'draft' has guarded transitions and an unguarded one; mark the unguarded one otherwise=True",
            "  - 'reviewed' from 'review' has guarded transitions and an unguarded one; mark the unguarded one otherwise=True",
            "  - 'reviewed' from 'review': the guards 'payload.approved == true' and \"payload.note != ''\" can both be true, e.g. when payload.approved = True, payload.note = '\\x00'; make them exclusive, or make one the fallback (otherwise=True)",
            "  - 'error' from 'draft': cannot prove the guards \"'a' in ctx['amount']\" and \"ctx['amount'] > 1\" are never both true: `in` searches ctx['amount'], which is not a list; compare values with literals, or make one the fallback (otherwise=True)",
            "  - transition 'draft' --go--> END reads ctx['beta'], which Ctx does not have",
            "  - transition 'draft' --go--> END reads ctx['zeta'], which Ctx does not have",
            "  - guard \"count('nope') > 1 and count('ghost') == 0\" counts 'ghost', which is not an event",
            "  - guard \"count('nope') > 1 and count('ghost') == 0\" counts 'nope', which is not an event",
        ]
    )


def test_workflow_level_problems(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        flow = Workflow("w")
        a = flow.state("a")
        b = flow.state("b")
        flow.transition(a, b, on="timeout")
        """,
    )
    assert error(path) == "\n".join(
        [
            "workflow 'w' is not valid:",
            "  - workflow 'w' has no transition from START; add one to the state every token begins in, e.g. flow.transition(START, <state>)",
            "  - workflow 'w' has no transition into END, so no token of it can complete; add one, e.g. flow.transition(<state>, END, on=<event>)",
            "  - state 'a' cannot be reached from START",
            "  - state 'b' cannot be reached from START",
        ]
    )
    (tmp_path / "flow.py").write_text(HEAD + "flow = Workflow('empty')\n")
    assert (
        error(str(tmp_path / "flow.py"))
        == "workflow 'empty' is not valid:\n  - workflow 'empty' has no states"
    )


def test_children(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        class Parent(BaseModel):
            repo: str
        class Child(BaseModel):
            repo: str
            branch: str
            extra: int = 0
        kid = Workflow("kid", context=Child)
        k = kid.state("k")
        kid.transition(START, k, when="ctx['repo'] == 'x'")
        kid.transition(k, END, on="timeout")
        flow = Workflow("top", context=Parent)
        p = flow.state("p", parallel=[kid], inputs=["repo", "nope"])
        flow.transition(START, p)
        flow.transition(p, END, on="error")
        """,
    )
    assert error(path) == "\n".join(
        [
            "workflow 'top' is not valid:",
            "  - state 'p' hands on 'nope', which Parent does not have",
            "  - state 'p' does not hand on 'branch', which 'kid' requires; add it to inputs",
            "  - parallel state 'p' needs a transition on 'joined'",
            "  - parallel state 'p' has no task, so 'error' can never fire; check 'branches' on 'joined'",
            "  - in child workflow 'kid': START has no fallback: a child workflow is started by the state that runs it, and no one is told when no guard holds; leave one transition from START without a guard, or mark one otherwise=True",
        ]
    )


def test_nesting_and_names(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        a = Workflow("a")
        b = Workflow("b")
        sa = a.state("sa", parallel=[b])
        sb = b.state("sb", parallel=[a])
        top = Workflow("top")
        st = top.state("st", parallel=[a])
        """,
    )
    assert error(path) == (
        "workflow 'top' is not valid:\n"
        "  - state 'sb' of 'b' runs 'a', which runs 'b' in turn; a workflow cannot run itself"
    )
    path = write(
        tmp_path,
        """
        one = Workflow("same")
        x = one.state("x")
        one.transition(START, x)
        one.transition(x, END, on="timeout")
        flow = Workflow("same")
        p = flow.state("p", parallel=[one])
        flow.transition(START, p)
        flow.transition(p, END, on="joined")
        """,
    )
    assert (
        error(path)
        == "workflow 'same' is not valid:\n  - two different workflows are named 'same'; give each its own name"
    )


def test_id_length_and_model_names(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        import schemas
        class Ctx(BaseModel):
            a: int = 0
        kid = Workflow("k" * 40, context=schemas.Ctx)
        k = kid.state("k")
        kid.transition(START, k)
        kid.transition(k, END, on="timeout")
        flow = Workflow("top", context=Ctx)
        p = flow.state("p" * 20, parallel=[kid])
        flow.transition(START, p)
        flow.transition(p, END, on="joined")
        """,
        "from pydantic import BaseModel\nclass Ctx(BaseModel):\n    b: int = 0\n",
    )
    assert error(path) == "\n".join(
        [
            "workflow 'top' is not valid:",
            "  - the child token ids can be 66 characters longer than the top token's id, so with a top id of 64 characters they can pass 128; use shorter state and workflow names, or nest less",
            "  - two different models are named 'Ctx'; give each its own name",
        ]
    )


def test_into_checks(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        class Verdict(BaseModel):
            ok: bool
        class Ctx(BaseModel):
            verdict: Verdict | None = None
            title: str = ""
        flow = Workflow("w", context=Ctx)
        s = flow.state("s")
        flow.event("a", into="verdict")
        flow.event("b", payload=Verdict, into="missing")
        flow.event("c", payload=Verdict, into="title")
        flow.event("d", payload=Verdict, into="verdict")
        flow.transition(START, s)
        flow.transition(s, END, on="d")
        """,
    )
    assert error(path) == "\n".join(
        [
            "workflow 'w' is not valid:",
            "  - event 'a' has into='verdict', but no payload model; give it one, e.g. payload=Verdict",
            "  - event 'b' has into='missing', which Ctx does not have",
            "  - event 'c' has into='title', but Ctx.title cannot hold a Verdict; declare it e.g. as title: Verdict | None = None",
        ]
    )


def test_python_name_checks(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        flow = Workflow("w")
        s = flow.state("class")
        flow.transition(START, s)
        flow.transition(s, END, on="timeout")
        """,
    )
    assert error(path) == "'class' cannot be used as a Python name in the generated contract"


def test_schemas_lose_their_titles(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        from enum import Enum
        class Color(str, Enum):
            red = "red"
        class Inner(BaseModel):
            title: str
        class Ctx(BaseModel):
            color: Color | None = None
            items: list[Inner] = []
        flow = Workflow("w", context=Ctx)
        s = flow.state("s")
        flow.transition(START, s, when="ctx['color'] == 'red'")
        flow.transition(START, s, otherwise=True)
        flow.transition(s, END, on="timeout")
        """,
    )
    schemas = compile_path(path).document["schemas"]
    assert sorted(schemas) == ["Color", "Ctx", "Inner"]
    assert schemas["Inner"] == {
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
        "type": "object",
    }
    assert schemas["Color"] == {"enum": ["red"], "type": "string"}
    assert schemas["Ctx"]["properties"]["color"] == {
        "anyOf": [{"$ref": "#/schemas/Color"}, {"type": "null"}],
        "default": None,
    }
