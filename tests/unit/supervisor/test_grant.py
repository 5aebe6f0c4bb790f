"""The grant is defined once (`stateous.model.wire.GrantWire`): the supervisor checks a claim's
answer against it, and the API's OpenAPI model is derived from it."""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest

from stateous.control.api.openapi_document import EnteredBy, Grant
from stateous.model.wire import EnteredByWire, GrantWire
from stateous.supervisor.grant import grant_from

GOOD: dict[str, Any] = {
    "task": 7, "token": "O-1", "state": "draft", "visit": 2, "attempt": 3,
    "context": {"title": "t"}, "memory": {"k": 1}, "entered_by": {"name": "submitted"},
}  # fmt: skip


def test_a_good_answer_is_kept_as_it_came() -> None:
    grant = grant_from(GOOD)
    assert grant.claim == GOOD
    assert (grant.task, grant.token, grant.state, grant.attempt) == (7, "O-1", "draft", 3)
    assert (grant.lost, grant.reporting, grant.running, grant.stuck) == (False,) * 4


def test_a_grant_with_a_traceparent_keeps_it() -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert grant_from({**GOOD, "traceparent": parent}).claim["traceparent"] == parent


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ([], "the answer is not a JSON object"),
        ({**GOOD, "task": True}, "'task' is missing or has the wrong type"),
        ({**GOOD, "token": 1}, "'token' is missing or has the wrong type"),
        (
            {k: v for k, v in GOOD.items() if k != "visit"},
            "'visit' is missing or has the wrong type",
        ),
        ({**GOOD, "context": []}, "'context' is missing or has the wrong type"),
        ({**GOOD, "memory": None}, "'memory' is missing or has the wrong type"),
        ({**GOOD, "entered_by": {}}, "'entered_by' has no name"),
        ({**GOOD, "entered_by": "submitted"}, "'entered_by' has no name"),
        ({**GOOD, "entered_by": {"name": 1}}, "'entered_by' has no name"),
        ({**GOOD, "traceparent": 1}, "'traceparent' is missing or has the wrong type"),
    ],
)
def test_an_answer_that_is_not_a_grant_says_why(body: object, why: str) -> None:
    with pytest.raises(ValueError) as refused:
        grant_from(body)
    assert str(refused.value) == why


def test_the_openapi_models_have_the_fields_of_the_one_definition() -> None:
    assert list(Grant.model_fields) == list(get_type_hints(GrantWire))
    assert list(EnteredBy.model_fields) == list(get_type_hints(EnteredByWire)) == ["name"]
    assert Grant.model_fields["entered_by"].annotation is EnteredBy
    # `traceparent` is additive: only a token with a trace has it.
    required = [key for key in get_type_hints(GrantWire) if key != "traceparent"]
    assert Grant.model_json_schema()["required"] == required
