"""Search keys: `flow.search(...)`, its compile checks and the graph's `search`."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from stateous import Workflow
from stateous.compiler.build import compile_path
from stateous.model.authoring import DeclarationError
from stateous.model.canonical import checksum, structure
from stateous.model.errors import StateousError
from stateous.model.graph import load_graph
from tests.unit.model import reference as ref

HEAD = "from stateous import END, START, Workflow\nfrom pydantic import BaseModel\n"

#: The first `orders` starter, without `into=`, whose checksum is a test vector.
ORDERS = """
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
"""

ORDERS_SCHEMAS = '''
from pydantic import BaseModel
class Item(BaseModel):
    """The context of each token of `orders`."""
    title: str
class Verdict(BaseModel):
    """The payload of the event `reviewed`."""
    approved: bool
    note: str = ""
'''

RULE = "a search key is a str, an int, a bool or an Enum of these, optionally | None"


class Ctx(BaseModel):
    customer: str


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


def refused(call: Callable[[], Any]) -> str:
    with pytest.raises(DeclarationError) as info:
        call()
    return info.value.message


def one_state(context: str, search: str) -> str:
    """A valid one-state workflow `w`, with the context model `Ctx` if `context` defines one."""
    model = ", context=Ctx" if "class Ctx" in context else ""
    return textwrap.dedent(context) + textwrap.dedent(
        f"""
        flow = Workflow("w"{model})
        {search}
        s = flow.state("s")
        flow.transition(START, s)
        flow.transition(s, END, on="timeout")
        """
    )


def test_the_keys_enter_the_document_sorted_after_the_transitions(tmp_path: Path) -> None:
    plain = compile_path(write(tmp_path, ORDERS, ORDERS_SCHEMAS))
    assert "search" not in plain.document
    assert plain.text == ref.ORDERS_GRAPH_NO_INTO
    assert checksum(plain.document) == ref.ORDERS_NO_INTO_CHECKSUM
    with_customer = ORDERS_SCHEMAS.replace("title: str\n", "title: str\n    customer: str = ''\n")
    path = write(tmp_path, ORDERS + 'flow.search("title", "customer")\n', with_customer)
    compiled = compile_path(path)
    assert compiled.document["search"] == ["customer", "title"]
    assert list(compiled.document) == [
        "stateous",
        "workflow",
        "context",
        "states",
        "events",
        "transitions",
        "search",
        "schemas",
    ]
    assert '  ],\n  "search": [\n    "customer",\n    "title"\n  ],\n  "schemas"' in compiled.text


def test_search_keys_count_in_the_checksum_but_not_in_the_structure(tmp_path: Path) -> None:
    plain = compile_path(write(tmp_path, ORDERS, ORDERS_SCHEMAS)).document
    searched = compile_path(write(tmp_path, ORDERS + 'flow.search("title")\n')).document
    assert searched["search"] == ["title"]
    assert checksum(searched) != checksum(plain)
    assert structure(searched) == structure(plain) == ref.ORDERS_NO_INTO_CHECKSUM
    graph = load_graph(compile_path(write(tmp_path, ORDERS + 'flow.search("title")\n')).text)
    assert graph.search == ("title",)
    assert graph.structure == ref.ORDERS_NO_INTO_CHECKSUM
    assert load_graph(ref.ORDERS_GRAPH_NO_INTO).search == ()


def test_every_fitting_type_is_accepted(tmp_path: Path) -> None:
    context = """
    import enum
    from typing import Annotated, Literal, Optional
    from pydantic import Field, StringConstraints
    class Tier(enum.StrEnum):
        gold = "gold"
        silver = "silver"
    class Size(enum.IntEnum):
        small = 1
        large = 2
    class Flag(enum.Enum):
        on = True
        named = "named"
    class Ctx(BaseModel):
        name: str
        count: int
        paid: bool
        tier: Tier
        size: Size | None = None
        flag: Flag = Flag.on
        kind: Literal["a", "b"] = "a"
        note: Optional[str] = None
        code: Annotated[str, StringConstraints(max_length=8)] = ""
        number: Annotated[int | None, Field(ge=0)] = None
        alias_field: str = Field("", alias="orderId")
    """
    keys = [
        "name",
        "count",
        "paid",
        "tier",
        "size",
        "flag",
        "kind",
        "note",
        "code",
        "number",
        "orderId",
    ]
    search = "flow.search(" + ", ".join(repr(k) for k in keys) + ")"
    compiled = compile_path(write(tmp_path, one_state(context, search)))
    assert compiled.document["search"] == sorted(keys)


def test_each_refused_key_is_one_line_naming_it(tmp_path: Path) -> None:
    context = """
    import enum
    from pydantic import Field
    class Rate(enum.Enum):
        low = 0.5
    class Inner(BaseModel):
        x: int = 0
    class Ctx(BaseModel):
        title: str
        total: float = 0.0
        tags: list[str] = []
        inner: Inner | None = None
        either: str | int = ""
        rate: Rate = Rate.low
        meta: dict[str, str] = {}
        order_id: str = Field("", alias="orderId")
    """
    search = (
        'flow.search("title", "missing", "total", "tags", "inner", "either", "rate", "meta", '
        '"order_id")'
    )
    assert error(write(tmp_path, one_state(context, search))) == "\n".join(
        [
            "workflow 'w' is not valid:",
            "  - flow.search names 'missing', which Ctx does not have",
            f"  - flow.search names 'total', but Ctx.total is float; {RULE}",
            f"  - flow.search names 'tags', but Ctx.tags is list[str]; {RULE}",
            f"  - flow.search names 'inner', but Ctx.inner is Inner | None; {RULE}",
            f"  - flow.search names 'either', but Ctx.either is str | int; {RULE}",
            f"  - flow.search names 'rate', but Ctx.rate is Rate; {RULE}",
            f"  - flow.search names 'meta', but Ctx.meta is dict[str, str]; {RULE}",
            # The context's JSON holds the alias, so the key is the alias.
            "  - flow.search names 'order_id', which Ctx does not have",
        ]
    )


def test_a_workflow_without_a_context_model_refuses_any_key(tmp_path: Path) -> None:
    path = write(tmp_path, one_state("", 'flow.search("customer", "order_id")'))
    assert error(path) == "\n".join(
        [
            "workflow 'w' is not valid:",
            "  - flow.search names 'customer', 'order_id', but workflow 'w' has no context model "
            "to search; give it one, e.g. Workflow('w', context=Order)",
        ]
    )


def test_a_child_workflow_declares_no_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        class Ctx(BaseModel):
            repo: str = ""
        child = Workflow("look", context=Ctx)
        child.search("repo")
        seen = child.state("seen")
        child.transition(START, seen)
        child.transition(seen, END, on="timeout")
        flow = Workflow("dev", context=Ctx)
        reviews = flow.state("reviews", parallel=[child])
        flow.transition(START, reviews)
        flow.transition(reviews, END, on="joined")
        """,
    )
    assert error(path) == "\n".join(
        [
            "workflow 'dev' is not valid:",
            "  - in child workflow 'look': flow.search is for the top workflow: a child token is "
            "found through its top token, so declare the keys there",
        ]
    )


def test_the_call_checks_its_names_at_once() -> None:
    flow = Workflow("w", context=Ctx)
    assert refused(lambda: flow.search()) == (
        "flow.search needs at least one context key, e.g. flow.search('customer')"
    )
    assert refused(lambda: flow.search("")) == (
        "flow.search takes context keys by name, e.g. flow.search('customer'), not ''"
    )
    assert refused(lambda: flow.search(["customer"])) == (
        "flow.search takes context keys by name, e.g. flow.search('customer'), not ['customer']"
    )
    assert refused(lambda: flow.search("customer", "customer")) == (
        "search key 'customer' is already declared"
    )
    assert flow.search_keys == []  # a refused call declares nothing
    flow.search("customer")
    assert refused(lambda: flow.search("other", "customer")) == (
        "search key 'customer' is already declared"
    )
    assert flow.search_keys == ["customer"]
    flow.search("other")
    assert flow.search_keys == ["customer", "other"]
