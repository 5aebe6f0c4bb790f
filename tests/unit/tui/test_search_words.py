"""What `/` on the tokens screen takes: an id prefix, `KEY=VALUE` words, or both."""

from __future__ import annotations

import pytest

from stateous.tui.search import Search, parse_search


@pytest.mark.parametrize(
    ("text", "search"),
    [
        ("", Search()),
        ("ORDER-", Search(prefix="ORDER-")),
        ("ORDER 1", Search(prefix="ORDER 1")),  # no KEY=VALUE: the prefix as typed
        ("customer=acme", Search(context={"customer": "acme"})),
        ("customer=acme order_id=4711", Search(context={"customer": "acme", "order_id": 4711})),
        ("  vip=true  ", Search(context={"vip": True})),
        ('customer="acme corp"', Search(context={"customer": "acme corp"})),
        ('order_id="4711"', Search(context={"order_id": "4711"})),
        ('name="acme', Search(context={"name": '"acme'})),  # while the quote is being typed
        ("ORDER- customer=acme", Search(prefix="ORDER-", context={"customer": "acme"})),
        ("customer=", Search(context={"customer": ""})),
        (
            "customer=acme =x",
            Search(problem="'=x' is not KEY=VALUE, such as customer=acme"),
        ),
        (
            "a=1 a=2",
            Search(problem="the key 'a' is given twice; a token's key has one value"),
        ),
    ],
)
def test_the_words_of_a_search(text: str, search: Search) -> None:
    assert parse_search(text) == search
